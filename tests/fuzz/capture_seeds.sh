#!/bin/sh
# capture_seeds.sh - seeds of the S3 fuzz targets from a real server's
# answers: starts the test server (tests/s3server/SERVER.sh: swift or rgw),
# makes the requests objfs makes (put with metadata, head, ranged get,
# listings, errors, multipart, copy, batch delete), SigV4-signed, and
# writes each response body to tests/fuzz/corpus/s3_xml/SERVER-NAME (with
# the selector byte of fuzz_s3_xml.c first) and each header block to
# tests/fuzz/corpus/s3_header/SERVER-NAME.  Run by hand when a server's
# answers change:
#   sh tests/fuzz/capture_seeds.sh swift; sh tests/fuzz/capture_seeds.sh rgw
set -eu
cd "$(dirname "$0")/../.."
server=${1:-swift}
W=$(mktemp -d /tmp/objfs-seeds-XXXXXX)
trap 'sh tests/s3server/$server.sh stop "$W" >/dev/null 2>&1 || true; rm -rf "$W"' EXIT
sh "tests/s3server/$server.sh" start "$W" >/dev/null
. "$W/env"
/usr/bin/python3 - "$server" "$OBJFS_TEST_S3_ENDPOINT" "$OBJFS_TEST_S3_REGION" \
	"$OBJFS_TEST_S3_BUCKET" "$OBJFS_TEST_S3_ACCESS_KEY" "$OBJFS_TEST_S3_SECRET_KEY" <<'PYEOF'
import base64, datetime, hashlib, hmac, http.client, re, sys, urllib.parse

server, endpoint, region, bucket, ak, sk = sys.argv[1:7]
host = endpoint.split("://", 1)[1]
XML, HDR = "tests/fuzz/corpus/s3_xml/", "tests/fuzz/corpus/s3_header/"


def q(s, safe="/"):
    return urllib.parse.quote(s, safe=safe + "-_.~")


def req(name, sel, method, key, params=None, headers=None, body=b"", secret=sk):
    params = params or {}
    headers = dict(headers or {})
    path = "/" + bucket + ("/" + q(key) if key is not None else "")
    query = "&".join("%s=%s" % (q(k, ""), q(v, "")) for k, v in sorted(params.items()))
    amz = datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")
    headers.update({"host": host, "x-amz-date": amz,
                    "x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
    names = sorted(h.lower() for h in headers)
    canon = "".join("%s:%s\n" % (h.lower(), str(v).strip())
                    for h, v in sorted(headers.items(), key=lambda x: x[0].lower()))
    creq = "\n".join([method, path, query, canon, ";".join(names),
                      headers["x-amz-content-sha256"]])
    scope = "%s/%s/s3/aws4_request" % (amz[:8], region)
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    k = ("AWS4" + secret).encode()
    for m in (amz[:8], region, "s3", "aws4_request"):
        k = hmac.new(k, m.encode(), hashlib.sha256).digest()
    headers["Authorization"] = ("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
                                "Signature=%s" % (ak, scope, ";".join(names),
                                hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()))
    c = http.client.HTTPConnection(host, timeout=30)
    c.request(method, path + ("?" + query if query else ""), body=body, headers=headers)
    r = c.getresponse()
    data = r.read()
    lines = ["HTTP/1.1 %d %s" % (r.status, r.reason)]
    lines += ["%s: %s" % (h, v) for h, v in r.getheaders()]
    with open(HDR + server + "-" + name, "wb") as f:
        f.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    if sel is not None and data:
        with open(XML + server + "-" + name, "wb") as f:
            f.write(bytes([sel]) + data)
    return r, data


meta = {"x-amz-meta-mode": "33188", "x-amz-meta-uid": "1000", "x-amz-meta-gid": "1000",
        "x-amz-meta-mtime": "1700000000.123456789", "Content-Type": "text/plain"}
req("put", None, "PUT", "vol/a b.txt", headers=meta, body=b"hello world")
req("put-link", None, "PUT", "vol/link", headers={"x-amz-meta-mode": "41471"}, body=b"a b.txt")
req("put-dir", None, "PUT", "vol/sub/", headers={"x-amz-meta-mode": "16877"})
req("put-deep", None, "PUT", "vol/sub/deep&<>\u00e9.txt", body=b"x")
req("head", None, "HEAD", "vol/a b.txt")
req("range", None, "GET", "vol/a b.txt", headers={"Range": "bytes=2-5"})
lp = {"list-type": "2", "encoding-type": "url"}
req("list", 1, "GET", None, dict(lp, prefix="vol/", delimiter="/"))
req("list-flat", 1, "GET", None, dict(lp, prefix="vol/"))
r, d = req("list-trunc", 1, "GET", None, dict(lp, prefix="vol/", **{"max-keys": "1"}))
tok = re.search(rb"<NextContinuationToken>(.*?)</NextContinuationToken>", d)
if tok:
    req("list-next", 1, "GET", None, dict(lp, prefix="vol/", **{"max-keys": "1",
        "continuation-token": tok.group(1).decode()}))
req("list-empty", 1, "GET", None, dict(lp, prefix="none/"))
req("nosuchkey", 0, "GET", "vol/missing")
req("badsignature", 0, "GET", None, lp, secret="wrong")
r, d = req("initiate", 2, "POST", "vol/big", {"uploads": ""})
upload = re.search(rb"<UploadId>(.*?)</UploadId>", d).group(1).decode()
r, d = req("part", None, "PUT", "vol/big", {"partNumber": "1", "uploadId": upload},
           body=b"p" * 100)
etag = r.getheader("ETag")
done = ("<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag>"
        "</Part></CompleteMultipartUpload>" % etag).encode()
req("complete", 3, "POST", "vol/big", {"uploadId": upload}, body=done)
req("complete-again", 0, "POST", "vol/big", {"uploadId": upload}, body=done)
req("copy", 3 + 5, "PUT", "vol/copy", headers={"x-amz-copy-source": "/%s/vol/a%%20b.txt" % bucket})
dl = (b"<Delete><Quiet>false</Quiet><Object><Key>vol/copy</Key></Object>"
      b"<Object><Key>vol/none</Key></Object></Delete>")
req("delete", 4, "POST", None, {"delete": ""}, body=dl,
    headers={"Content-MD5": base64.b64encode(hashlib.md5(dl).digest()).decode()})
PYEOF
echo "capture_seeds: $server answers written to tests/fuzz/corpus/s3_xml and s3_header"
