"""Integration test of objfs-csi's gRPC server and Identity service.

Starts the real objfs-csi on a unix socket and calls it with Python's grpcio:
each Identity call, an unknown method, an unimplemented CSI method, a garbage
body, 100 concurrent calls, a second instance on the same socket, bad command
lines, and SIGTERM while calls are in flight.
"""
import concurrent.futures
import os
import signal
import subprocess
import sys
import threading
import time

import grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import csilib  # noqa: E402

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY-identity-test"


def main():
    work, cleanup = csilib.tempdir("objfs-identity-")
    pb, pbg = csilib.load_csi_stubs(work)
    r = csilib.Runner("csi_identity")
    creds = os.path.join(work, "creds")
    with open(creds, "w") as f:
        f.write("# test keys\naccess_key_id = AKIDTEST\nsecret_access_key = %s\n" % SECRET)
    os.chmod(creds, 0o600)
    drv = csilib.Driver(work, extra=["--credentials-file", creds],
                        env={"AWS_SESSION_TOKEN": SECRET + "-token"})
    try:
        drv.start()
        ident = pbg.IdentityStub(drv.channel)

        def plugin_info():
            resp = ident.GetPluginInfo(pb.GetPluginInfoRequest(), timeout=5)
            assert resp.name == "objfs.csi.io", resp.name
            out = subprocess.run([csilib.CSI_BIN, "--version"], check=True,
                                 capture_output=True, text=True).stdout
            assert resp.vendor_version and resp.vendor_version in out, (resp, out)

        def capabilities():
            resp = ident.GetPluginCapabilities(pb.GetPluginCapabilitiesRequest(), timeout=5)
            services = {c.service.type for c in resp.capabilities if c.HasField("service")}
            ctrl = pbg.ControllerStub(drv.channel)
            # CONTROLLER_SERVICE is advertised exactly when the controller answers.
            try:
                ctrl.ControllerGetCapabilities(pb.ControllerGetCapabilitiesRequest(), timeout=5)
                has_ctrl = True
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.UNIMPLEMENTED, e
                has_ctrl = False
            assert (pb.PluginCapability.Service.CONTROLLER_SERVICE in services) == has_ctrl, services
            assert pb.PluginCapability.Service.VOLUME_ACCESSIBILITY_CONSTRAINTS not in services

        def probe():
            resp = ident.Probe(pb.ProbeRequest(), timeout=5)
            assert resp.HasField("ready") and resp.ready.value is True, resp

        def unknown_method():
            code, details, _ = csilib.raw_call(drv.channel, "/csi.v1.Identity/NoSuchCall", b"")
            assert code == grpc.StatusCode.UNIMPLEMENTED, (code, details)
            code, details, _ = csilib.raw_call(drv.channel, "/not.a.Service/X", b"")
            assert code == grpc.StatusCode.UNIMPLEMENTED, (code, details)

        def unimplemented_csi_method():
            # objfs needs no attach step: ControllerPublishVolume is not offered.
            code, details, _ = csilib.raw_call(
                drv.channel, "/csi.v1.Controller/ControllerPublishVolume", b"")
            assert code == grpc.StatusCode.UNIMPLEMENTED, (code, details)
            assert "ControllerPublishVolume" in details, details

        def garbage_body():
            for body in (b"\xff\xff\xff\xff", b"\x0a\x05ab", b"\x08"):
                code, details, _ = csilib.raw_call(
                    drv.channel, "/csi.v1.Identity/GetPluginInfo", body)
                assert code == grpc.StatusCode.INVALID_ARGUMENT, (body, code, details)
                assert "GetPluginInfoRequest" in details, details
            # The server is still healthy afterwards.
            probe()

        def concurrent_calls():
            calls = [ident.Probe, ident.GetPluginInfo, ident.GetPluginCapabilities]
            reqs = [pb.ProbeRequest(), pb.GetPluginInfoRequest(),
                    pb.GetPluginCapabilitiesRequest()]
            with concurrent.futures.ThreadPoolExecutor(100) as ex:
                futs = [ex.submit(calls[i % 3], reqs[i % 3], timeout=30)
                        for i in range(100)]
                results = [f.result() for f in futs]
            assert len(results) == 100
            assert all(results[i].name == "objfs.csi.io" for i in range(1, 100, 3))

        def second_instance_refused():
            p = subprocess.run(drv.args, capture_output=True, text=True, timeout=20,
                               stdin=subprocess.DEVNULL)
            assert p.returncode == 1, (p.returncode, p.stderr)
            assert "another objfs-csi is already serving" in p.stderr, p.stderr
            probe()  # the first instance still owns its socket

        def bad_command_lines():
            cases = [
                ([], "--endpoint is required"),
                (["--endpoint", drv.endpoint, "--bogus"], "unknown option --bogus"),
                (["--endpoint", "tcp://1.2.3.4:5"], "not unix:///absolute/path"),
                (["--endpoint", drv.endpoint, "--mode", "both"], "--mode must be"),
                (["--endpoint", drv.endpoint, "--mode", "node"], "--node-id is required"),
                (["--endpoint", drv.endpoint, "--node-id", "n", "--log-level", "loud"], "--log-level"),
                (["--endpoint", drv.endpoint, "--node-id", "n", "--store", "ftp://x"], "--store"),
                (["--endpoint", drv.endpoint, "--node-id", "n", "--s3-endpoint", "s3.example.com"], "--s3-endpoint"),
                (["--endpoint", drv.endpoint, "--node-id", "n", "--credentials-file", "/nonexistent"], "No such file"),
            ]
            env = {k: v for k, v in os.environ.items() if k not in ("CSI_ENDPOINT", "NODE_ID")}
            for args, want in cases:
                p = subprocess.run([csilib.CSI_BIN] + args, capture_output=True, text=True,
                                   timeout=10, env=env, stdin=subprocess.DEVNULL)
                assert p.returncode == 2, (args, p.returncode, p.stderr)
                assert want in p.stderr, (args, p.stderr)
                assert p.stderr.count("\n") == 1, (args, p.stderr)
            ok = subprocess.run([csilib.CSI_BIN, "--endpoint", "unix:///tmp/x/csi.sock",
                                 "--node-id", "n", "--dry-run"], capture_output=True,
                                text=True, timeout=10, env=env)
            assert ok.returncode == 0 and ok.stdout == "" and ok.stderr == "", ok
            # No --s3-endpoint: AWS's endpoint for the region, not a refusal.
            ok = subprocess.run([csilib.CSI_BIN, "--endpoint", "unix:///tmp/x/csi.sock",
                                 "--node-id", "n", "--store", "s3://b/p", "--s3-region",
                                 "eu-west-1", "--dry-run"], capture_output=True,
                                text=True, timeout=10, env=env)
            assert ok.returncode == 0 and ok.stderr == "", ok
            h = subprocess.run([csilib.CSI_BIN, "--help"], capture_output=True, text=True)
            assert h.returncode == 0 and "--endpoint" in h.stdout and "--dry-run" in h.stdout

        def no_secrets_in_logs():
            log = drv.log()
            assert '"level":"debug"' in log, log[:500]
            assert SECRET not in log
            with open("/proc/%d/cmdline" % drv.proc.pid, "rb") as f:
                assert SECRET.encode() not in f.read()

        def shutdown_with_calls_in_flight():
            stop = threading.Event()
            outcomes = []

            def hammer():
                ch = grpc.insecure_channel(drv.endpoint)
                stub = pbg.IdentityStub(ch)
                while not stop.is_set():
                    try:
                        stub.Probe(pb.ProbeRequest(), timeout=10)
                        outcomes.append("ok")
                    except grpc.RpcError as e:
                        outcomes.append(e.code())
                        if e.code() == grpc.StatusCode.UNAVAILABLE:
                            break
                ch.close()

            threads = [threading.Thread(target=hammer) for _ in range(8)]
            for t in threads:
                t.start()
            time.sleep(0.5)
            t0 = time.time()
            rc = drv.stop(signal.SIGTERM, timeout=20)
            stop.set()
            for t in threads:
                t.join(15)
            assert rc == 0, (rc, drv.log()[-2000:])
            assert time.time() - t0 < 15
            assert outcomes.count("ok") > 0, outcomes[:10]
            allowed = {"ok", grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED}
            assert set(outcomes) <= allowed, set(outcomes)
            assert not os.path.exists(drv.sock), "socket left behind"
            assert not os.path.exists(drv.sock + ".lock"), "lock file left behind"
            assert "shutting down" in drv.log()

        r.run("GetPluginInfo", plugin_info)
        r.run("GetPluginCapabilities", capabilities)
        r.run("Probe", probe)
        r.run("unknown method", unknown_method)
        r.run("unimplemented CSI method", unimplemented_csi_method)
        r.run("garbage body", garbage_body)
        r.run("100 concurrent calls", concurrent_calls)
        r.run("second instance refused", second_instance_refused)
        r.run("bad command lines", bad_command_lines)
        r.run("no secrets in logs", no_secrets_in_logs)
        r.run("SIGTERM with calls in flight", shutdown_with_calls_in_flight)
    finally:
        try:
            drv.stop(signal.SIGKILL, timeout=5)
        except Exception:  # noqa: BLE001
            pass
        cleanup()
    return r.finish()


if __name__ == "__main__":
    sys.exit(main())
