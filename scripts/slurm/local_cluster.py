"""A throw-away one-node Slurm cluster on this machine, for trying profiles/slurm/.

Debian's Slurm 22.05 (slurmctld, slurmd, and slurmdbd on a private MariaDB so
that `sacct` works), munge for authentication, every file (configuration,
state, spool, logs, pid files, database) in one folder, every daemon on
127.0.0.1 on free ports. The node declares one GPU cut into shards (the
GRES a site declares for several jobs per GPU) with no device behind it.
Needs root and apt (the packages are installed when missing). Used by
tests/test_slurm.py; by hand:

    python3 scripts/slurm/local_cluster.py start /tmp/slurm   # prints the line below
    export SLURM_CONF=/tmp/slurm/slurm.conf PATH=/tmp/slurm/bin:$PATH
    .venv/bin/snakemake --profile profiles/slurm --workflow-profile none ...
    python3 scripts/slurm/local_cluster.py stop /tmp/slurm

Only the standard library: runs with any python3.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

PACKAGES = ["slurmctld", "slurmd", "slurm-client", "slurmdbd", "munge", "mariadb-server"]
BINARIES = ["slurmctld", "slurmd", "slurmdbd", "sbatch", "srun", "squeue", "sacct", "sacctmgr", "scontrol", "sinfo",
            "scancel", "munged", "munge", "unmunge", "mariadbd", "mariadb-install-db", "mariadb"]
MUNGE_RUN = Path("/run/munge")
MUNGE_PID = MUNGE_RUN / "munged.pid"
CLUSTER = "beluga"
ACCOUNT = "beluga"
DB_USER, DB_PASS = "slurm", "beluga-local-test"
DB_SIZE = ["--innodb-log-file-size=16M"]  # not the default 100 MB redo log: a test cluster writes little


class Unavailable(RuntimeError):
    """This machine cannot run the local cluster; the message says why."""


def _run(cmd, env=None, timeout=120, check=True, **kw):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, **kw)
    if check and out.returncode != 0:
        raise Unavailable(f"`{' '.join(map(str, cmd))}` exited {out.returncode}: {(out.stderr or out.stdout)[-1500:]}")
    return out


def _free_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def _which(name: str) -> str | None:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def missing_binaries() -> list[str]:
    return [b for b in BINARIES if _which(b) is None]


def ensure_packages(log=print) -> None:
    """apt-get install the Debian packages when a binary is missing (update the lists once if that fails)."""
    missing = missing_binaries()
    if not missing:
        return
    if os.geteuid() != 0:
        raise Unavailable(f"not root, so cannot apt-get install the missing {', '.join(missing)}")
    if shutil.which("apt-get") is None:
        raise Unavailable(f"no apt-get to install the missing {', '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]
    log(f"installing {' '.join(PACKAGES)}")
    out = _run(cmd, env=env, timeout=600, check=False)
    if out.returncode != 0:
        log("apt-get install failed; apt-get update, then again")
        _run(["apt-get", "update", "-q"], env=env, timeout=600, check=False)
        _run(cmd, env=env, timeout=600)
    still = missing_binaries()
    if still:
        raise Unavailable(f"still missing after apt-get install: {', '.join(still)}")


def _sbin(name: str) -> str:
    return _which(name) or name


def _pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (not reaped because its parent is gone) has ended
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _stop_pid(pid: int | None, name: str, log=print, wait: float = 15) -> None:
    if not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _alive(pid):
        log(f"{name} (pid {pid}) ignored SIGTERM; SIGKILL")
        os.kill(pid, signal.SIGKILL)


def _wait(what: str, probe, timeout: float, logfile: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.3)
    tail = ""
    if logfile is not None and logfile.exists():
        tail = "\n" + "\n".join(logfile.read_text(errors="replace").splitlines()[-15:])
    raise Unavailable(f"{what} not ready after {timeout:.0f} s{tail}")


class LocalSlurm:
    """One node named after this host, almost all its memory, one partition, and one GPU gres cut into
    ``shards`` shards (``Gres=gpu:1,shard:S``) for jobs that share a GPU (``--gres=shard:N``). Its device
    file is /dev/null (AutoDetect=off): Slurm only counts it, nothing in a job can use it. The node
    declares ``cpus`` CPUs (4 unless given) whatever the machine has (SlurmdParameters=config_overrides):
    with 1-CPU jobs the shards, not the CPUs, decide how many GPU-sharing jobs run at once."""

    def __init__(self, root: Path, cpus: int | None = None, min_job_age: int = 300, shards: int = 4, log=print):
        self.root = Path(root).resolve()
        self.conf = self.root / "slurm.conf"
        self.cpus = cpus or 4
        self.shards = shards
        self.real_memory: int | None = None  # MB, the node's (set when the configuration is written)
        self.min_job_age = min_job_age
        self.log = log
        self.node = socket.gethostname().split(".")[0]
        # Clients find the configuration through SLURM_CONF; inside a job, the
        # snakemake-executor-plugin-slurm-jobstep (0.6.1) drops every SLURM_*
        # variable but the job's identity before it calls srun, so srun there
        # would look for /etc/slurm/slurm.conf (where a real site keeps it). A
        # wrapper first on PATH (sbatch exports PATH to the job) points srun at
        # this cluster's file instead of writing into /etc.
        self.bin = self.root / "bin"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf),
                        PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        self.state_file = self.root / "cluster.json"

    # -- files ---------------------------------------------------------------------------------------------------
    def _write_configs(self, ports: dict[str, int]) -> None:
        r = self.root
        for d in ("state", "spool", "log", "db"):
            (r / d).mkdir(parents=True, exist_ok=True)
        mem_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2**20
        real_memory = max(512, mem_mb - max(1024, mem_mb // 10))  # slurmd refuses a node with less than declared
        self.real_memory = real_memory
        self.conf.write_text(f"""\
# One-node Slurm on 127.0.0.1 (scripts/slurm/local_cluster.py). Not for production.
ClusterName={CLUSTER}
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ports['slurmctld']}
SlurmdPort={ports['slurmd']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
# slurmdbd (so that sacct answers) with the job comment, where the snakemake
# plugin writes rule_<name>_wildcards_<...>
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={ports['slurmdbd']}
AccountingStoreFlags=job_comment
# the GPU and its shards in each job's AllocTRES (sacct)
AccountingStorageTRES=gres/gpu,gres/shard
JobCompType=jobcomp/none
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
ReturnToService=2
# finished jobs stay in the controller's records (scontrol, squeue) this long
MinJobAge={self.min_job_age}
SchedulerParameters=sched_interval=1
# the node as declared here, not as slurmd finds it (more CPUs than the machine has)
SlurmdParameters=config_overrides
# one GPU (no device: gres.conf gives it /dev/null) cut into {self.shards} shards
GresTypes=gpu,shard
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.cpus} RealMemory={real_memory} \\
  Gres=gpu:1,shard:{self.shards} State=UNKNOWN
PartitionName=local Nodes={self.node} Default=YES MaxTime=INFINITE State=UP
""")
        # the GPU's device file: /dev/null stands in for /dev/nvidia0 (slurmd wants a character device)
        (r / "gres.conf").write_text(f"""\
AutoDetect=off
Name=gpu File=/dev/null
Name=shard Count={self.shards} File=/dev/null
""")
        self.bin.mkdir(parents=True, exist_ok=True)
        srun = self.bin / "srun"
        path = os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep) if Path(d) != self.bin)
        real_srun = shutil.which("srun", path=path) or "/usr/bin/srun"
        srun.write_text(f'#!/bin/sh\nSLURM_CONF={self.conf} exec {real_srun} "$@"\n')
        srun.chmod(0o755)
        dbd = r / "slurmdbd.conf"  # slurmdbd reads it next to $SLURM_CONF; it must be private to SlurmUser
        dbd.write_text(f"""\
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={ports['slurmdbd']}
SlurmUser=root
LogFile={r}/log/slurmdbd.log
PidFile={r}/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={ports['mariadb']}
StorageUser={DB_USER}
StoragePass={DB_PASS}
StorageLoc=slurm_acct_db
""")
        dbd.chmod(0o600)

    # -- daemons -------------------------------------------------------------------------------------------------
    def _munge_works(self) -> bool:
        try:
            enc = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
            if enc.returncode != 0:
                return False
            dec = subprocess.run(["unmunge"], input=enc.stdout, capture_output=True, timeout=10)
            return dec.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def _start_munge(self) -> bool:
        """Start munged (as the munge user, on the default socket) unless one already answers; True if started."""
        if self._munge_works():
            return False
        if not Path("/etc/munge/munge.key").exists():
            _run(["runuser", "-u", "munge", "--", _sbin("mungekey"), "--create"])
        MUNGE_RUN.mkdir(parents=True, exist_ok=True)
        shutil.chown(MUNGE_RUN, "munge", "munge")
        MUNGE_RUN.chmod(0o755)
        self._save_state(started_munge=True)  # before it starts: stop() ends it even if start() fails later
        _run(["runuser", "-u", "munge", "--", _sbin("munged")])
        _wait("munged", self._munge_works, 15, Path("/var/log/munge/munged.log"))
        return True

    def _mariadb(self, sql: str, check=True):
        return _run(["mariadb", "--no-defaults", "-S", str(self.root / "mysql.sock"), "-u", "root", "-e", sql],
                    check=check, timeout=30)

    def _start_mariadb(self, port: int) -> None:
        r = self.root
        _run([_sbin("mariadb-install-db"), "--no-defaults", f"--datadir={r}/db", "--user=root",
              "--auth-root-authentication-method=socket", "--skip-test-db", *DB_SIZE], timeout=120)
        with open(r / "log" / "mariadb.out", "w") as out:
            subprocess.Popen([_sbin("mariadbd"), "--no-defaults", f"--datadir={r}/db", "--user=root",
                              f"--socket={r}/mysql.sock", f"--port={port}", "--bind-address=127.0.0.1",
                              f"--pid-file={r}/mariadb.pid", f"--log-error={r}/log/mariadb.log", "--skip-log-bin",
                              "--innodb-buffer-pool-size=64M", *DB_SIZE],
                             stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        _wait("MariaDB", lambda: self._mariadb("SELECT 1", check=False).returncode == 0, 60, r / "log" / "mariadb.log")
        grants = "".join(f"CREATE USER '{DB_USER}'@'{h}' IDENTIFIED BY '{DB_PASS}'; "
                         f"GRANT ALL ON slurm_acct_db.* TO '{DB_USER}'@'{h}'; " for h in ("127.0.0.1", "localhost"))
        self._mariadb(grants)

    def _save_state(self, **kw) -> None:
        self.state_file.write_text(json.dumps({**self._state(), **kw}))

    def _state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def _ok(self, *cmd) -> bool:
        try:
            return subprocess.run(list(cmd), capture_output=True, env=self.env, timeout=15).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def node_idle(self) -> bool:
        try:
            out = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env,
                                 timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return out.returncode == 0 and out.stdout.strip() == "idle"

    def start(self) -> LocalSlurm:
        ensure_packages(self.log)
        if os.geteuid() != 0:
            raise Unavailable("not root: the daemons (munged, slurmctld, slurmd as root) need root")
        self.root.mkdir(parents=True, exist_ok=True)
        names = ("slurmctld", "slurmd", "slurmdbd", "mariadb")
        ports = dict(zip(names, _free_ports(len(names)), strict=True))
        self._write_configs(ports)
        self._save_state(ports=ports)
        self._start_munge()
        log = self.root / "log"
        self._start_mariadb(ports["mariadb"])
        _run([_sbin("slurmdbd")], env=self.env)
        _wait("slurmdbd", lambda: self._ok("sacctmgr", "-n", "list", "cluster"), 60, log / "slurmdbd.log")
        for args in (["add", "cluster", CLUSTER], ["add", "account", ACCOUNT, f"Cluster={CLUSTER}"],
                     ["add", "user", "root", f"Account={ACCOUNT}", f"DefaultAccount={ACCOUNT}"]):
            _run(["sacctmgr", "-i", *args], env=self.env)
        _run([_sbin("slurmctld"), "-f", str(self.conf)], env=self.env)
        _wait("slurmctld", lambda: self._ok("scontrol", "ping"), 30, log / "slurmctld.log")
        _run([_sbin("slurmd"), "-f", str(self.conf)], env=self.env)
        _wait(f"node {self.node} idle in sinfo", self.node_idle, 60, log / "slurmd.log")
        return self

    def stop(self) -> None:
        """Cancel what is left, then stop the daemons by their pid files (munged only if started here)."""
        r = self.root
        if _alive(_pid(r / "slurmctld.pid")):
            subprocess.run(["scancel", "--user", "root"], capture_output=True, env=self.env, timeout=30)
            deadline = time.monotonic() + 20  # let slurmd kill the jobs' processes before it stops
            while time.monotonic() < deadline:
                q = subprocess.run(["squeue", "-h", "-t", "PENDING,RUNNING,COMPLETING,SUSPENDED", "-o", "%i"],
                                   capture_output=True, text=True, env=self.env, timeout=30)
                if q.returncode != 0 or not q.stdout.strip():
                    break
                time.sleep(0.5)
        for name in ("slurmd", "slurmctld", "slurmdbd", "mariadb"):
            _stop_pid(_pid(r / f"{name}.pid"), name, self.log)
        if not _alive(_pid(r / "mariadb.pid")):
            shutil.rmtree(r / "db", ignore_errors=True)  # the accounting database is throw-away
        if self._state().get("started_munge"):
            _stop_pid(_pid(MUNGE_PID), "munged", self.log)
            self._save_state(started_munge=False)

    def __enter__(self) -> LocalSlurm:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print(__doc__, file=sys.stderr)
        return 2
    cluster = LocalSlurm(Path(argv[1]), log=lambda m: print(m, file=sys.stderr))
    if argv[0] == "stop":
        cluster.stop()
        return 0
    try:
        cluster.start()
    except Unavailable as e:
        cluster.stop()
        print(f"cannot start a local Slurm: {e}", file=sys.stderr)
        return 1
    print(f"export SLURM_CONF={cluster.conf} PATH={cluster.bin}:$PATH")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
