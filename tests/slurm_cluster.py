"""A one-node Slurm cluster on localhost, from Debian's ``slurm-wlm`` and ``munge`` packages.

``python tests/slurm_cluster.py start DIR`` writes a ``munge.key``, a ``slurm.conf`` (its own
ports, state and logs under DIR, ``SlurmUser`` the caller) and starts ``munged``,
``slurmctld`` and ``slurmd``; ``stop DIR`` stops them. Clients reach the cluster with
``SLURM_CONF=DIR/slurm.conf``. The tests' session fixture uses :class:`SlurmCluster`.

Partitions: ``debug`` (the default), ``low`` (preempted jobs are cancelled: state
``PREEMPTED``), ``lowrq`` (preempted jobs are requeued) and ``high`` (its jobs preempt
both). ``sacct`` needs ``slurmdbd``: completions are read from ``scontrol show job``
(``MinJobAge`` keeps them an hour) and the ``jobcomp/filetxt`` log.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd")
MISSING = "slurm-wlm and munge are not installed (apt-get install -y slurm-wlm munge)"


def missing() -> str | None:
    """Why no cluster can start here (None: it can)."""
    for binary in ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel"):
        if shutil.which(binary, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") is None:
            return f"{binary} not found: {MISSING}"
    if os.geteuid() != 0:
        return "the local Slurm cluster runs its daemons as root (SlurmUser=root, proctrack/linuxproc)"
    return None


def _free_ports(count: int) -> list[int]:
    socks = [socket.socket() for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def _which(name: str) -> str:
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") or name


class SlurmCluster:
    """munged + slurmctld + slurmd under ``folder`` (see the module docstring)."""

    def __init__(self, folder: Path, cpus: int | None = None):
        self.folder = Path(folder).resolve()
        self.cpus = cpus  # None: the machine's; more declares CPUs the node lacks (config_overrides)
        self.conf = self.folder / "slurm.conf"
        self.node = socket.gethostname().split(".")[0]

    @property
    def env(self) -> dict[str, str]:
        """What a client needs to talk to this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    def write_config(self) -> None:
        for sub in ("state", "spool", "log", "run", "munge"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.folder / "munge", 0o700)
        key = self.folder / "munge" / "munge.key"
        if not key.exists():
            key.write_bytes(os.urandom(1024))
            os.chmod(key, 0o400)
        ctld_port, d_port = _free_ports(2)
        user = pwd.getpwuid(os.geteuid()).pw_name
        cpus = self.cpus or os.cpu_count() or 1
        overrides = "SlurmdParameters=config_overrides\n" if cpus > (os.cpu_count() or 1) else ""
        f = self.folder
        self.conf.write_text(f"""\
ClusterName=wikitest
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser={user}
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={f}/munge/munge.socket
StateSaveLocation={f}/state
SlurmdSpoolDir={f}/spool
SlurmctldPidFile={f}/run/slurmctld.pid
SlurmdPidFile={f}/run/slurmd.pid
SlurmctldLogFile={f}/log/slurmctld.log
SlurmdLogFile={f}/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc={f}/log/jobcomp.txt
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
MpiDefault=none
ReturnToService=2
MinJobAge=3600
KillWait=2
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=5
JobRequeue=1
SlurmctldParameters=enable_configless
{overrides}NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} State=UNKNOWN
PartitionName=debug Nodes={self.node} Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName=low Nodes={self.node} MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=CANCEL
PartitionName=lowrq Nodes={self.node} MaxTime=INFINITE State=UP PriorityTier=1 PreemptMode=REQUEUE
PartitionName=high Nodes={self.node} MaxTime=INFINITE State=UP PriorityTier=10 OverSubscribe=EXCLUSIVE
""")

    def _pid(self, daemon: str) -> int | None:
        path = self.folder / "run" / f"{daemon}.pid"
        try:
            pid = int(path.read_text().split()[0])
            os.kill(pid, 0)
            return pid
        except (OSError, ValueError, IndexError):
            return None

    def start_daemon(self, daemon: str) -> None:
        f = self.folder
        argv = {
            "munged": [_which("munged"), "--force", f"--key-file={f}/munge/munge.key", f"--socket={f}/munge/munge.socket",
                       f"--pid-file={f}/run/munged.pid", f"--log-file={f}/log/munged.log",
                       f"--seed-file={f}/munge/munge.seed"],
            "slurmctld": [_which("slurmctld"), "-f", str(self.conf)],
            "slurmd": [_which("slurmd"), "-f", str(self.conf)],
        }[daemon]
        env = {**os.environ, **self.env}
        subprocess.run(argv, env=env, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=30)

    def stop_daemon(self, daemon: str, wait_s: float = 10.0) -> None:
        pid = self._pid(daemon)
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        end = time.monotonic() + wait_s
        while self._pid(daemon) is not None and time.monotonic() < end:
            time.sleep(0.05)
        if self._pid(daemon) is not None:
            os.kill(pid, signal.SIGKILL)
        (self.folder / "run" / f"{daemon}.pid").unlink(missing_ok=True)

    def scontrol(self, *args: str, check: bool = True) -> str:
        done = subprocess.run([_which("scontrol"), *args], env={**os.environ, **self.env}, capture_output=True,
                              text=True, timeout=30)
        if check and done.returncode != 0:
            raise RuntimeError(f"scontrol {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout

    def wait_ready(self, deadline_s: float = 60.0) -> None:
        """Until the node is idle (it registered and takes jobs)."""
        end = time.monotonic() + deadline_s
        last = ""
        while time.monotonic() < end:
            done = subprocess.run([_which("sinfo"), "-h", "-N", "-o", "%T"], env={**os.environ, **self.env},
                                  capture_output=True, text=True, timeout=30)
            last = (done.stdout + done.stderr).strip()
            if done.returncode == 0 and last and all(s.rstrip("*") in ("idle", "mixed", "allocated") for s in last.split()):
                return
            time.sleep(0.2)
        raise RuntimeError(f"the Slurm node is not ready after {deadline_s:.0f}s: {last}; see {self.folder}/log")

    def _stale(self, daemon: str) -> list[int]:
        """Processes of ``daemon`` that name this cluster's folder but no pid file records: a
        cluster that was here before (a test run killed, its temporary folders removed, the path
        numbered again), which would read and write this one's state, socket and spool."""
        mark, recorded = f"{self.folder}/", self._pid(daemon)
        found = []
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                args = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace").split("\0")
            except (OSError, ValueError):
                continue
            if os.path.basename(args[0]) == daemon and any(mark in arg for arg in args[1:]) and int(entry) != recorded:
                found.append(int(entry))
        return found

    def _stop_stale(self, daemon: str, wait_s: float = 10.0) -> None:
        for pid in self._stale(daemon):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        end = time.monotonic() + wait_s
        while self._stale(daemon) and time.monotonic() < end:  # a killed process's cmdline is empty
            time.sleep(0.05)

    def start(self) -> SlurmCluster:
        self.write_config()
        for daemon in DAEMONS:
            if self._pid(daemon) is None:
                self._stop_stale(daemon)
                self.start_daemon(daemon)
                if daemon == "munged":
                    self._wait_file(self.folder / "munge" / "munge.socket")
        self.wait_ready()
        return self

    def restart_controller(self) -> None:
        self.start_daemon("slurmctld")
        self.wait_ready()

    def stop(self) -> None:
        for daemon in reversed(DAEMONS):
            self.stop_daemon(daemon)

    @staticmethod
    def _wait_file(path: Path, deadline_s: float = 10.0) -> None:
        end = time.monotonic() + deadline_s
        while not path.exists():
            if time.monotonic() > end:
                raise RuntimeError(f"{path} did not appear")
            time.sleep(0.05)

    def __enter__(self) -> SlurmCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: python tests/slurm_cluster.py start|stop DIR", file=sys.stderr)
        return 2
    why = missing()
    if why and argv[0] == "start":
        print(why, file=sys.stderr)
        return 2
    cluster = SlurmCluster(Path(argv[1]))
    if argv[0] == "start":
        cluster.start()
        print(f"export SLURM_CONF={cluster.conf}")
    else:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
