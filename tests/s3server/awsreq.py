"""awsreq.py - one SigV4-signed request to an AWS-style API (S3, IAM, STS)
of a test server, with nothing but the Python standard library.  Used by
lib.sh (creating the test bucket) and by the tests that set a bucket policy
or talk to RGW's IAM and STS APIs.

As a module:
    request(endpoint, region, service, access_key, secret_key, method,
            path="/", query=None, body=b"", headers=None, token=None,
            timeout=10) -> (status, headers, body)
As a program (keys from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY):
    awsreq.py [--service S] [--region R] [--data FILE] METHOD URL
prints the body and exits 0 for a 2xx answer, else prints the status and
body on stderr and exits 1.

Signature Version 4 as AWS documents it: the canonical query string sorts
the parameters and encodes every byte but unreserved ones (RFC 3986), the
payload hash is signed (x-amz-content-sha256, which S3 requires).
"""
import datetime
import hashlib
import hmac
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def _quote(s, safe="-_.~"):
    return urllib.parse.quote(s, safe=safe)


def request(endpoint, region, service, access_key, secret_key, method,
            path="/", query=None, body=b"", headers=None, token=None,
            timeout=10):
    u = urllib.parse.urlsplit(endpoint)
    host = u.netloc
    if isinstance(body, str):
        body = body.encode()
    query = dict(query or {})
    now = datetime.datetime.now(datetime.timezone.utc)
    amz = now.strftime("%Y%m%dT%H%M%SZ")
    day = amz[:8]
    ph = hashlib.sha256(body).hexdigest()
    hdrs = {"host": host, "x-amz-date": amz, "x-amz-content-sha256": ph}
    if token:
        hdrs["x-amz-security-token"] = token
    for k, v in (headers or {}).items():
        hdrs[k.lower()] = v
    cpath = _quote(path, safe="/-_.~")
    cquery = "&".join("%s=%s" % (_quote(k), _quote(v))
                      for k, v in sorted(query.items()))
    names = sorted(hdrs)
    creq = "\n".join([method, cpath, cquery,
                      "".join("%s:%s\n" % (n, str(hdrs[n]).strip()) for n in names),
                      ";".join(names), ph])
    scope = "%s/%s/%s/aws4_request" % (day, region, service)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret_key).encode()
    for m in (day, region, service, "aws4_request"):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    hdrs["Authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
                             "Signature=%s" % (access_key, scope, ";".join(names), sig))
    del hdrs["host"]
    url = "%s://%s%s%s" % (u.scheme, host, cpath, "?" + cquery if cquery else "")
    req = urllib.request.Request(url, method=method, headers=hdrs,
                                 data=body if method in ("PUT", "POST") else None)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def main(argv):
    service, region, data = "s3", os.environ.get("AWS_REGION", "us-east-1"), b""
    while len(argv) > 2 and argv[0].startswith("--"):
        opt, val = argv[0], argv[1]
        argv = argv[2:]
        if opt == "--service":
            service = val
        elif opt == "--region":
            region = val
        elif opt == "--data":
            with open(val, "rb") as f:
                data = f.read()
        else:
            sys.exit("awsreq.py: unknown option " + opt)
    if len(argv) != 2:
        sys.exit("usage: awsreq.py [--service S] [--region R] [--data FILE] METHOD URL")
    method, url = argv
    u = urllib.parse.urlsplit(url)
    query = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    status, _, body = request("%s://%s" % (u.scheme, u.netloc), region, service,
                              os.environ["AWS_ACCESS_KEY_ID"],
                              os.environ["AWS_SECRET_ACCESS_KEY"], method,
                              u.path or "/", query, data,
                              token=os.environ.get("AWS_SESSION_TOKEN"))
    if 200 <= status < 300:
        sys.stdout.buffer.write(body)
        return 0
    sys.stderr.write("awsreq.py: HTTP %d: %s\n" % (status, body.decode("utf-8", "replace")))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
