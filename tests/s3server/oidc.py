"""oidc.py - a throwaway OpenID Connect identity provider for the STS tests:
an RSA key and a self-signed certificate made with openssl, the JWKS served
over a local HTTP server (as Keycloak serves it, where Ceph RGW looks:
ISSUER/protocol/openid-connect/certs, with the certificate in x5c), and
JWTs signed with the key (RGW 16 reads
ISSUER/.well-known/openid-configuration first, then its jwks_uri).  Also a container credentials endpoint (EKS Pod
Identity's protocol: GET with an Authorization token, JSON keys with an
Expiration), whose answers the test chooses.

    idp = Idp(workdir)            # key, certificate, HTTP server started
    idp.issuer                    # http://127.0.0.1:PORT/realms/objfs
    idp.thumbprint                # SHA-1 of the certificate (hex)
    idp.token(sub, aud, ttl)      # a signed JWT
    idp.jwks_fetches              # how many times the JWKS was read
    idp.container = fn            # fn(auth_header) -> (status, dict)
    idp.container_url             # http://127.0.0.1:PORT/creds
    idp.imds = fn                 # fn() -> (status, dict): the keys of the
                                  # instance's role (IMDSv2, as EC2 answers:
                                  # PUT /latest/api/token with
                                  # X-aws-ec2-metadata-token-ttl-seconds,
                                  # then GETs carrying the token; a GET
                                  # without a valid token is 401)
    idp.imds_role                 # the role's name (None: no role, 404)
    idp.imds_url                  # http://127.0.0.1:PORT
    idp.imds_puts                 # the TTL header of each token PUT
    idp.imds_gets, idp.imds_refused   # GETs answered, GETs refused (401)
    idp.close()

    rgw_sts_setup(env, idp, role)  # RGW (OBJFS_TEST_S3_* env): the OIDC
                                   # provider and a role it may assume;
                                   # returns the role's ARN
    assume(endpoint, role, token)  # STS keys (access, secret, session)
"""
import base64
import hashlib
import http.server
import json
import os
import subprocess
import threading
import time
import urllib.parse

import awsreq


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Idp:
    def __init__(self, work):
        self.key = os.path.join(work, "idp-key.pem")
        self.cert = os.path.join(work, "idp-cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-keyout", self.key, "-out", self.cert, "-days", "2",
                        "-subj", "/CN=objfs-test-idp"], check=True,
                       capture_output=True, timeout=60)
        der = subprocess.run(["openssl", "x509", "-in", self.cert, "-outform", "DER"],
                             check=True, capture_output=True, timeout=30).stdout
        self.thumbprint = hashlib.sha1(der).hexdigest()
        self.x5c = base64.b64encode(der).decode()
        self.jwks_fetches = 0
        self.paths = []
        self.container_calls = 0
        self.container = None
        self.imds = None
        self.imds_role = "objfs-node-role"
        self.imds_tokens = set()
        self.imds_puts = []
        self.imds_gets = 0
        self.imds_refused = 0
        idp = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def reply(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass        # the client gave up (a timed-out fetch)

            def text(self, status, body):
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_PUT(self):
                path = urllib.parse.urlsplit(self.path).path
                idp.paths.append("PUT " + path)
                if path != "/latest/api/token" or idp.imds is None:
                    return self.reply(404, {})
                ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
                idp.imds_puts.append(ttl)
                if ttl is None or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                    return self.text(400, "")
                token = "imds-token-%d-%s" % (len(idp.imds_puts), os.urandom(8).hex())
                idp.imds_tokens.add(token)
                self.text(200, token)

            def imds_get(self, path):
                if self.headers.get("X-aws-ec2-metadata-token") not in idp.imds_tokens:
                    idp.imds_refused += 1
                    return self.text(401, "")
                idp.imds_gets += 1
                base = "/latest/meta-data/iam/security-credentials/"
                if idp.imds_role is None:
                    return self.text(404, "")
                if path == base:
                    return self.text(200, idp.imds_role)
                if path == base + idp.imds_role:
                    status, body = idp.imds()
                    return self.reply(status, body)
                self.text(404, "")

            def do_GET(self):
                path = urllib.parse.urlsplit(self.path).path
                idp.paths.append(path)
                if path.startswith("/latest/") and idp.imds is not None:
                    return self.imds_get(path)
                if path == "/realms/objfs/.well-known/openid-configuration":
                    # Ceph RGW 16 reads the discovery document, then jwks_uri
                    self.reply(200, {"issuer": idp.issuer,
                                     "jwks_uri": idp.issuer + "/protocol/openid-connect/certs"})
                elif path == "/realms/objfs/protocol/openid-connect/certs":
                    idp.jwks_fetches += 1
                    self.reply(200, {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig",
                                               "kid": "objfs-test", "x5c": [idp.x5c]}]})
                elif path == "/creds" and idp.container is not None:
                    idp.container_calls += 1
                    status, body = idp.container(self.headers.get("Authorization"))
                    self.reply(status, body)
                else:
                    self.reply(404, {})

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.issuer = "http://127.0.0.1:%d/realms/objfs" % self.port
        self.container_url = "http://127.0.0.1:%d/creds" % self.port
        self.imds_url = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def token(self, sub="system:serviceaccount:objfs:objfs-test", aud="objfs", ttl=3600):
        now = int(time.time())
        head = b64url(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "objfs-test"}).encode())
        body = b64url(json.dumps({"iss": self.issuer, "sub": sub, "aud": aud,
                                  "client_id": aud, "iat": now, "nbf": now - 5,
                                  "exp": now + ttl}).encode())
        signing = ("%s.%s" % (head, body)).encode()
        sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key],
                             input=signing, check=True, capture_output=True,
                             timeout=30).stdout
        return "%s.%s.%s" % (head, body, b64url(sig))

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def iam(env, action, **params):
    """One IAM call to RGW as the test user (signed, service iam)."""
    form = dict(params, Action=action, Version="2010-05-08")
    body = urllib.parse.urlencode(form, quote_via=urllib.parse.quote)
    status, _, out = awsreq.request(env["OBJFS_TEST_S3_ENDPOINT"], env["OBJFS_TEST_S3_REGION"],
                                    "iam", env["OBJFS_TEST_S3_ACCESS_KEY"],
                                    env["OBJFS_TEST_S3_SECRET_KEY"], "POST", "/",
                                    body=body, headers={
                                        "Content-Type": "application/x-www-form-urlencoded"})
    if status // 100 != 2:
        raise RuntimeError("IAM %s: HTTP %d %s" % (action, status, out[:500]))
    return out


def rgw_sts_setup(env, idp, role="objfs-test-role"):
    """Registers idp with RGW and makes a role it may assume, allowed
    everything on S3; returns the role's ARN."""
    iam(env, "CreateOpenIDConnectProvider", Url=idp.issuer,
        **{"ClientIDList.member.1": "objfs", "ThumbprintList.member.1": idp.thumbprint})
    provider = idp.issuer.split("://", 1)[1]
    trust = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow",
        "Principal": {"Federated": ["arn:aws:iam:::oidc-provider/" + provider]},
        "Action": ["sts:AssumeRoleWithWebIdentity"],
        "Condition": {"StringEquals": {provider + ":app_id": "objfs"}}}]}
    iam(env, "CreateRole", RoleName=role, Path="/", AssumeRolePolicyDocument=json.dumps(trust))
    policy = {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": ["s3:*"], "Resource": ["arn:aws:s3:::*"]}]}
    iam(env, "PutRolePolicy", RoleName=role, PolicyName="objfs-s3",
        PolicyDocument=json.dumps(policy))
    return "arn:aws:iam:::role/" + role


def assume(endpoint, role, token, duration=900):
    """AssumeRoleWithWebIdentity at endpoint: (access, secret, session)."""
    import re
    import urllib.request
    form = urllib.parse.urlencode({"Action": "AssumeRoleWithWebIdentity",
                                   "Version": "2011-06-15", "RoleArn": role,
                                   "RoleSessionName": "objfs-test",
                                   "DurationSeconds": str(duration),
                                   "WebIdentityToken": token}).encode()
    with urllib.request.urlopen(urllib.request.Request(endpoint + "/", data=form),
                                timeout=30) as r:
        doc = r.read().decode()
    return tuple(re.search("<%s>([^<]*)</%s>" % (t, t), doc).group(1)
                 for t in ("AccessKeyId", "SecretAccessKey", "SessionToken"))
