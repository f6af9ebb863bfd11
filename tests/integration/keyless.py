"""Keyless credentials end to end, against a one-node Ceph RGW
(tests/s3server/rgw.sh) with its STS, and real objfs-mount FUSE mounts
holding no keys of their own (backend/credprov.h):

- web identity: a role in RGW trusting an OpenID Connect provider the test
  runs (tests/s3server/oidc.py: an RSA key and certificate made with
  openssl, JWKS over a local HTTP server); the mount gets AWS_ROLE_ARN and
  AWS_WEB_IDENTITY_TOKEN_FILE, exchanges the token with RGW's STS
  (AssumeRoleWithWebIdentity) and renews its keys during a long write.
  STS keys live at least 900 s (AWS's and RGW's minimum), so renewal is
  forced with creds_refresh close to their lifetime; every renewal is an
  exchange the identity provider sees (a JWKS read), and the token file is
  rotated meanwhile.
- container endpoint (EKS Pod Identity's protocol): the test's endpoint
  hands out keys of an RGW user that expire 8 s later, and deletes each key
  from RGW once expired (checked: RGW refuses it then); a write lasting
  25 s only completes if the mount renews before each expiry.
- shared files: a profile (AWS_PROFILE) of AWS_SHARED_CREDENTIALS_FILE
  and AWS_CONFIG_FILE gives the keys and the region, AWS_ENDPOINT_URL_S3
  the endpoint.
- EC2 instance metadata (IMDSv2) played on 127.0.0.1
  (AWS_EC2_METADATA_SERVICE_ENDPOINT): the token PUT carries its TTL
  header, every GET the token (one without is refused, as EC2 does); the
  keys are renewed during a long write.
- no keys anywhere (AWS_EC2_METADATA_DISABLED=true; then an instance with
  no role): the mount fails within seconds, saying no credentials were
  found and naming each source of the chain, in order.
No test sends a request to the real instance metadata address.

Needs root and /dev/fuse (exits 77 only when they or RGW are absent).
"""
import hashlib
import json
import os
import signal
import select
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csilib  # noqa: E402

sys.path.insert(0, os.path.join(csilib.SRCDIR, "tests", "s3server"))
import awsreq  # noqa: E402
import oidc  # noqa: E402

RGW_SH = os.path.join(csilib.SRCDIR, "tests", "s3server", "rgw.sh")
TOOL = os.path.join(csilib.BUILDDIR, "tests", "integration", "objfs-store-tool")
MiB = 1 << 20



class Mount:
    """objfs-mount -f of url at a fresh directory, with env (no keys)."""

    def __init__(self, work, url, env, opts=()):
        self.dir = os.path.join(work, "mnt-%d" % time.monotonic_ns())
        os.makedirs(self.dir)
        self.log = self.dir + ".log"
        r, w = os.pipe()
        o = ["ready_fd=%d" % w, "spool_dir=" + work] + list(opts)
        with open(self.log, "wb") as logf:
            self.proc = subprocess.Popen([csilib.MOUNT_BIN, "-f", "-o", ",".join(o), url,
                                          self.dir], pass_fds=(w,), env=env,
                                         stdout=logf, stderr=logf, start_new_session=True)
        os.close(w)
        ready, _, _ = select.select([r], [], [], 60)
        byte = os.read(r, 1) if ready else b""
        os.close(r)
        if byte != b"R":
            self.stop()
            raise AssertionError("mount not ready:\n" + self.text())

    def text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def stop(self):
        subprocess.run(["fusermount3", "-u", self.dir], capture_output=True, timeout=120)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        return self.proc.returncode


def slow_write(path, seconds, chunk=MiB):
    """Writes for about seconds, a chunk at a time; the SHA-256 and size."""
    h = hashlib.sha256()
    n = 0
    end = time.time() + seconds
    with open(path, "wb") as f:
        while time.time() < end:
            data = os.urandom(chunk)
            f.write(data)
            f.flush()
            h.update(data)
            n += len(data)
            time.sleep(0.25)
        os.fsync(f.fileno())
    return h.hexdigest(), n


def main():
    if os.geteuid() != 0 or not os.path.exists("/dev/fuse"):
        print("keyless: needs root and /dev/fuse: skipped")
        return 77
    if subprocess.run(["sh", RGW_SH, "installed"], capture_output=True).returncode != 0:
        print("keyless: Ceph RGW not installed: skipped")
        return 77
    work, cleanup = csilib.tempdir("objfs-keyless-")
    r = csilib.Runner("keyless")
    w = os.path.join(work, "rgw")
    idp = None
    started = False
    try:
        subprocess.run(["sh", RGW_SH, "start", w], check=True, timeout=120,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, OBJFS_RGW_STS="1"))
        started = True
        s3 = csilib.read_env(os.path.join(w, "env"))
        ep, bucket = s3["OBJFS_TEST_S3_ENDPOINT"], s3["OBJFS_TEST_S3_BUCKET"]
        idp = oidc.Idp(work)
        base_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        base_env.update({"AWS_ENDPOINT_URL": ep, "AWS_REGION": s3["OBJFS_TEST_S3_REGION"],
                         # never the real instance metadata, nor ~/.aws
                         "AWS_EC2_METADATA_DISABLED": "true",
                         "AWS_SHARED_CREDENTIALS_FILE": os.path.join(work, "none", "c"),
                         "AWS_CONFIG_FILE": os.path.join(work, "none", "g")})
        owner_env = dict(base_env, AWS_ACCESS_KEY_ID=s3["OBJFS_TEST_S3_ACCESS_KEY"],
                         AWS_SECRET_ACCESS_KEY=s3["OBJFS_TEST_S3_SECRET_KEY"])

        def stored_sha(key, env=owner_env):
            p = subprocess.run([TOOL, "s3://" + bucket, "get", key], env=env,
                               capture_output=True, timeout=120)
            assert p.returncode == 0, p.stderr
            return hashlib.sha256(p.stdout).hexdigest(), len(p.stdout)

        def web_identity():
            role = oidc.rgw_sts_setup(s3, idp)
            token_file = os.path.join(work, "token")
            with open(token_file, "w") as f:
                f.write(idp.token())
            env = dict(base_env, AWS_ROLE_ARN=role, AWS_WEB_IDENTITY_TOKEN_FILE=token_file,
                       AWS_ENDPOINT_URL_STS=ep)
            # Keys last 3600 s; renewing 3595 s before expiry renews every
            # 5 s (at most: a failed renewal waits 5 s too).
            m = Mount(work, "s3://%s/web" % bucket, env,
                      ["creds_refresh=3595", "part_size=5M"])
            try:
                before = idp.jwks_fetches
                assert before >= 1, "no STS exchange at mount"
                done = {}

                def rotate():
                    time.sleep(8)
                    with open(token_file + ".new", "w") as f:
                        f.write(idp.token(ttl=600))
                    os.rename(token_file + ".new", token_file)
                    done["rotated"] = True

                t = threading.Thread(target=rotate)
                t.start()
                sha, n = slow_write(os.path.join(m.dir, "long"), 20)
                t.join()
                assert done.get("rotated")
                exchanges = idp.jwks_fetches - before
                assert exchanges >= 2, "renewals during the write: %d" % exchanges
                log = m.text()
                assert "web identity: keys of role " + role in log, log[-2000:]
                tok = open(token_file).read()
                assert tok not in log and tok.split(".")[2] not in log
            finally:
                rc = m.stop()
            assert rc == 0, "unmount: %d\n%s" % (rc, m.text()[-3000:])
            # Read back as the role (RGW: objects belong to their writer).
            ak, sk, st = oidc.assume(ep, role, idp.token())
            assert stored_sha("web/long", dict(base_env, AWS_ACCESS_KEY_ID=ak,
                                               AWS_SECRET_ACCESS_KEY=sk,
                                               AWS_SESSION_TOKEN=st)) == (sha, n)
            print("  %d MiB in 20 s, %d STS exchanges" % (n // MiB, exchanges))

        keys = []           # (access, secret, expiry)
        lock = threading.Lock()
        revoked = []

        def admin(method, **q):
            """RGW's admin API on the user's keys (radosgw-admin would
            wait for the running gateway's cache to be told)."""
            status, _, body = awsreq.request(ep, "us-east-1", "s3",
                                             s3["OBJFS_TEST_S3_ACCESS_KEY"],
                                             s3["OBJFS_TEST_S3_SECRET_KEY"], method,
                                             "/admin/user", dict(q, key="", uid="objfs"))
            return status, body

        def container_endpoint(auth):
            if auth != "objfs-test-container-token":
                return 401, {"message": "bad token"}
            n = len(keys)
            ak, sk = "objfscont%04d" % n, "objfscontainersecret%04d" % n
            status, body = admin("PUT", **{"key-type": "s3", "access-key": ak,
                                           "secret-key": sk})
            if status != 200:
                return 500, {"message": body.decode()[-200:]}
            exp = time.time() + 8
            with lock:
                keys.append((ak, sk, exp))
            return 200, {"AccessKeyId": ak, "SecretAccessKey": sk,
                         "Expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                     time.gmtime(exp))}

        def reaper(stop):
            while not stop.is_set():
                now = time.time()
                with lock:
                    due = [k for k in keys if k[2] < now - 0.5 and k[0] not in revoked]
                for ak, sk, _ in due:
                    status, body = admin("DELETE", **{"key-type": "s3", "access-key": ak})
                    assert status == 200, (status, body)
                    revoked.append(ak)
                stop.wait(0.5)

        def container():
            idp.container = container_endpoint
            tok = os.path.join(work, "container-token")
            with open(tok, "w") as f:
                f.write("objfs-test-container-token\n")
            env = dict(base_env, AWS_CONTAINER_CREDENTIALS_FULL_URI=idp.container_url,
                       AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=tok)
            stop = threading.Event()
            t = threading.Thread(target=reaper, args=(stop,))
            t.start()
            m = None
            try:
                m = Mount(work, "s3://%s/cont" % bucket, env,
                          ["creds_refresh=4", "part_size=5M"])
                sha, n = slow_write(os.path.join(m.dir, "long"), 25)
                rc = m.stop()
                assert rc == 0, "unmount: %d\n%s" % (rc, m.text()[-3000:])
                m = None
            finally:
                stop.set()
                t.join()
                if m is not None:
                    m.stop()
            assert stored_sha("cont/long") == (sha, n)
            # The keys really expired: RGW refuses a revoked one.
            assert len(revoked) >= 2, (len(keys), revoked)
            ak, sk, _ = keys[0]
            status, _, _ = awsreq.request(ep, "us-east-1", "s3", ak, sk, "HEAD",
                                          "/%s/cont/long" % bucket)
            assert status == 403, status
            print("  %d MiB in 25 s, %d keys handed out, %d revoked on expiry"
                  % (n // MiB, len(keys), len(revoked)))

        def shared_files():
            cf, gf = os.path.join(work, "aws-credentials"), os.path.join(work, "aws-config")
            with open(cf, "w") as f:
                f.write("[default]\naws_access_key_id = WRONG\naws_secret_access_key = WRONG\n"
                        "\n[objfs-test]\naws_access_key_id = %s\n"
                        "aws_secret_access_key = %s\n"
                        % (s3["OBJFS_TEST_S3_ACCESS_KEY"], s3["OBJFS_TEST_S3_SECRET_KEY"]))
            with open(gf, "w") as f:
                f.write("[default]\nregion = wrong-1\n[profile objfs-test]\nregion = %s\n"
                        "s3 =\n  addressing_style = path\n" % s3["OBJFS_TEST_S3_REGION"])
            env = {k: v for k, v in base_env.items()
                   if k not in ("AWS_ENDPOINT_URL", "AWS_REGION")}
            env.update(AWS_PROFILE="objfs-test", AWS_SHARED_CREDENTIALS_FILE=cf,
                       AWS_CONFIG_FILE=gf, AWS_ENDPOINT_URL_S3=ep)
            m = Mount(work, "s3://%s/prof" % bucket, env)
            try:
                with open(os.path.join(m.dir, "f"), "wb") as f:
                    f.write(b"from the profile\n")
                log = m.text()
            finally:
                rc = m.stop()
            assert rc == 0, "unmount: %d\n%s" % (rc, m.text()[-3000:])
            assert "region " + s3["OBJFS_TEST_S3_REGION"] in log, log[-2000:]
            assert s3["OBJFS_TEST_S3_SECRET_KEY"] not in log
            assert stored_sha("prof/f") == (hashlib.sha256(b"from the profile\n").hexdigest(),
                                            17)

        imds_keys = []

        def imds_answer():
            n = len(imds_keys)
            ak, sk = "objfsimds%04d" % n, "objfsimdssecret%04d" % n
            status, body = admin("PUT", **{"key-type": "s3", "access-key": ak,
                                           "secret-key": sk})
            if status != 200:
                return 500, {"Code": "Failed", "Message": body.decode()[-200:]}
            imds_keys.append(ak)
            exp = time.time() + 3600
            return 200, {"Code": "Success", "Type": "AWS-HMAC",
                         "LastUpdated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                         "AccessKeyId": ak, "SecretAccessKey": sk, "Token": "",
                         "Expiration": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(exp))}

        def instance_metadata():
            import urllib.error
            import urllib.request
            idp.imds = imds_answer
            idp.imds_role = "objfs-node-role"
            env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT=idp.imds_url)
            env.pop("AWS_EC2_METADATA_DISABLED")
            # Keys last 3600 s; renewing 3597 s before expiry renews every
            # 3 s or so: each renewal is a token PUT and two GETs.
            m = Mount(work, "s3://%s/imds" % bucket, env, ["creds_refresh=3597", "part_size=5M"])
            try:
                sha, n = slow_write(os.path.join(m.dir, "long"), 10)
                log = m.text()
            finally:
                rc = m.stop()
            assert rc == 0, "unmount: %d\n%s" % (rc, m.text()[-3000:])
            assert stored_sha("imds/long") == (sha, n)
            assert len(idp.imds_puts) >= 2, idp.imds_puts
            assert all(t == "21600" for t in idp.imds_puts), idp.imds_puts
            assert idp.imds_refused == 0 and idp.imds_gets >= 4, (idp.imds_refused,
                                                                  idp.imds_gets)
            assert "instance metadata %s: keys of role objfs-node-role" % idp.imds_url in log, \
                log[-2000:]
            assert "instance metadata" in log and "imds-token-" not in log
            # The fake is EC2's: a GET without the token is refused
            for hdrs in ({}, {"X-aws-ec2-metadata-token": "forged"}):
                req = urllib.request.Request(
                    idp.imds_url + "/latest/meta-data/iam/security-credentials/", headers=hdrs)
                try:
                    urllib.request.urlopen(req, timeout=10)
                    raise AssertionError("a GET without the token was answered")
                except urllib.error.HTTPError as e:
                    assert e.code == 401, e.code
            print("  %d MiB in 10 s, %d token PUTs, %d keys handed out"
                  % (n // MiB, len(idp.imds_puts), len(imds_keys)))

        def refused(env):
            """objfs-mount without usable keys: its exit status, output
            and how long it took."""
            mnt = os.path.join(work, "mnt-nokeys-%d" % time.monotonic_ns())
            os.makedirs(mnt)
            t0 = time.monotonic()
            p = subprocess.run([csilib.MOUNT_BIN, "-f", "-o", "spool_dir=" + work,
                                "s3://%s/nokeys" % bucket, mnt], env=env,
                               capture_output=True, timeout=120)
            secs = time.monotonic() - t0
            msgs = []
            for line in (p.stdout + p.stderr).decode(errors="replace").splitlines():
                try:
                    msgs.append(json.loads(line)["msg"])      # the JSON log lines
                except (ValueError, KeyError, TypeError):
                    msgs.append(line)
            return p.returncode, "\n".join(msgs), secs

        def no_keys():
            sources = ["environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY): unset",
                       'profile "default" in ' + base_env["AWS_SHARED_CREDENTIALS_FILE"],
                       base_env["AWS_CONFIG_FILE"] + " (no such file)",
                       "web identity (AWS_ROLE_ARN, AWS_WEB_IDENTITY_TOKEN_FILE): unset",
                       "container credentials (AWS_CONTAINER_CREDENTIALS_FULL_URI",
                       "EC2 instance metadata: disabled by AWS_EC2_METADATA_DISABLED"]
            rc, out, secs = refused(base_env)
            assert rc != 0, out
            assert "no credentials found" in out, out
            at = [out.find(s) for s in sources]
            assert -1 not in at and at == sorted(at), (at, out)
            assert "HTTP 412" not in out and "Stale file handle" not in out, out
            assert secs < 15, secs
            # Instance metadata that answers, with no role attached
            idp.imds = imds_answer
            idp.imds_role = None
            env = dict(base_env, AWS_EC2_METADATA_SERVICE_ENDPOINT=idp.imds_url)
            env.pop("AWS_EC2_METADATA_DISABLED")
            rc, out, secs = refused(env)
            assert rc != 0, out
            assert "no credentials found" in out and sources[0] in out, out
            assert ("EC2 instance metadata (%s): no IAM role is attached" % idp.imds_url) \
                in out, out
            assert secs < 15, secs

        r.run("no keys anywhere: the error names each source looked at", no_keys)
        r.run("shared files: AWS_PROFILE of the credentials and config files", shared_files)
        r.run("EC2 instance metadata (IMDSv2 on 127.0.0.1), renewed during a write",
              instance_metadata)
        r.run("web identity (RGW STS), renewed during a long write", web_identity)
        r.run("container endpoint, keys revoked as they expire during a long write",
              container)
    finally:
        if idp is not None:
            idp.close()
        if started or os.path.isdir(w):
            subprocess.run(["sh", RGW_SH, "stop", w], timeout=60)
        cleanup()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
