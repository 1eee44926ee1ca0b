"""Cluster files: the ``.env/*.md`` pages that describe one GKE TPU cluster each (seed Steps 4-5).

A cluster file is a markdown page named ``gke-<tpu>-<topo>-<owner>.md`` (or any page with
a ``Topology`` section). Its facts are bold key lines in the ``Topology``, ``Connection``
or ``Cluster`` sections::

    ## Topology
    - **Cluster**: alice-v5p-16
    - **TPU**: v5p, 2x2x2 topology = 8 chips per slice
    - **Zone**: europe-west4-b
    - **Project**: example-tpu-project

    ## Connection
    gcloud container clusters get-credentials alice-v5p-16 --location=europe-west4 --project=example-tpu-project
    # context: gke_example-tpu-project_europe-west4_alice-v5p-16

The kubectl context is the comment after ``get-credentials``; without one it is the name
gcloud gives the context it writes (``gke_<project>_<location>_<cluster>``). The xpk TPU
type counts TensorCores on v4/v5p (two per chip: 8 chips -> ``v5p-16``) and chips on
v5e/v6e (``v6e-8``, ``v5litepod-8``). A file that cannot be read or says two different
things is a :class:`~wikiengine.core.errors.WikiError` naming the file and line.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.identity import NAME_RE
from wikiengine.core.page import Page, load_page, split_lines, title_key


@dataclass(frozen=True)
class TpuGeneration:
    """What xpk and GKE call one TPU generation."""

    name: str  # as written in cluster files: v5p
    xpk_prefix: str  # xpk --tpu-type prefix: v5p, v5litepod
    accelerator: str  # node label cloud.google.com/gke-tpu-accelerator
    cores_per_chip: int  # what the xpk type counts: TensorCores (2) or chips (1)
    topology_dims: int  # 3 for the 3D-torus generations, 2 otherwise
    max_single_host_chips: int  # slices up to this size run on one VM


GENERATIONS = {
    g.name: g
    for g in (
        TpuGeneration("v4", "v4", "tpu-v4-podslice", 2, 3, 4),
        TpuGeneration("v5p", "v5p", "tpu-v5p-slice", 2, 3, 4),
        TpuGeneration("v5e", "v5litepod", "tpu-v5-lite-podslice", 1, 2, 8),
        TpuGeneration("v6e", "v6e", "tpu-v6e-slice", 1, 2, 8),
    )
}
_GENERATION_ALIASES = {"v5litepod": "v5e", "v5lite": "v5e"}
CHIPS_PER_HOST = 4  # on every multi-host slice of these generations


@dataclass(frozen=True)
class TpuSlice:
    """One slice: generation, topology and chip count, with the names xpk and GKE use."""

    generation: str
    topology: str  # 2x2x2
    chips: int

    @property
    def spec(self) -> TpuGeneration:
        return GENERATIONS[self.generation]

    @property
    def xpk_type(self) -> str:
        """The xpk ``--tpu-type``: ``v5p-16`` for 8 v5p chips (TensorCores), ``v6e-8`` for 8 v6e chips."""
        return f"{self.spec.xpk_prefix}-{self.chips * self.spec.cores_per_chip}"

    @property
    def chips_per_vm(self) -> int:
        return self.chips if self.chips <= self.spec.max_single_host_chips else CHIPS_PER_HOST

    @property
    def vms(self) -> int:
        return self.chips // self.chips_per_vm

    def label(self) -> str:
        """``v5p 2x2x2 (8 chips)``."""
        return f"{self.generation} {self.topology} ({self.chips} chips)"


@dataclass(frozen=True)
class ClusterFile:
    """One candidate cluster as its ``.env`` file describes it."""

    path: Path
    name: str
    tpu: TpuSlice
    project: str
    region: str
    zone: str | None
    context: str
    context_derived: bool  # True when no comment named it and gcloud's naming was assumed
    namespace: str = "default"

    @property
    def location(self) -> str:
        return self.zone or self.region


_KEY_LINE_RE = re.compile(r"^\s*(?:[-*+]\s+)?\*\*(?P<key>[^*:]+?)\s*:?\*\*\s*:?\s*(?P<value>.*?)\s*$")
_TABLE_ROW_RE = re.compile(r"^\s*\|\s*\**(?P<key>[^|*]+?)\**\s*\|\s*(?P<value>[^|]*?)\s*\|\s*$")
_TPU_RE = re.compile(
    r"^(?P<gen>v\d+[a-z]*)\s*[,;]?\s*(?:\(?\s*(?P<topo>\d+(?:x\d+)+)\)?)?(?:[^=]*=\s*(?P<chips>\d+)\s*chips?)?", re.I
)
MAX_DIM_DIGITS = 4  # a slice side of at most 9999 chips; longer digit strings are refused unparsed
_TOPO_RE = re.compile(r"\b\d+(?:x\d+)+\b")
_ZONE_RE = re.compile(r"^(?P<region>[a-z]+-[a-z]+\d+)-[a-z]$")
_REGION_RE = re.compile(r"^[a-z]+-[a-z]+\d+$")
_CONTEXT_COMMENT_RE = re.compile(r"\bcontext\s*[:=]\s*`?(?P<ctx>[^\s`]+)", re.I)
_GKE_CONTEXT_RE = re.compile(r"\bgke_[A-Za-z0-9_.:-]+")
SECTION_TITLES = ("topology", "connection", "cluster")
KEYS = {
    "cluster": "cluster",
    "cluster name": "cluster",
    "tpu": "tpu",
    "region": "region",
    "zone": "zone",
    "location": "location",
    "project": "project",
    "context": "context",
    "kubectl context": "context",
    "namespace": "namespace",
}


@dataclass(frozen=True)
class _Fact:
    """A value read from a cluster page, with its line."""

    value: str
    line: int


def _clean(value: str) -> str:
    return value.strip().strip("`").strip()


def _sections(page: Page) -> list:
    """The sections whose title starts with Topology, Connection or Cluster."""
    return [s for s in page.sections if s.key.split(" ", 1)[0] in SECTION_TITLES]


def _collect_facts(page: Page, path: Path) -> dict[str, _Fact]:
    facts: dict[str, _Fact] = {}
    for section in _sections(page):
        for offset, raw in enumerate(split_lines(section.body)):
            match = _KEY_LINE_RE.match(raw.rstrip("\r\n")) or _TABLE_ROW_RE.match(raw.rstrip("\r\n"))
            if not match:
                continue
            key = KEYS.get(title_key(match.group("key")))
            if key is None:
                continue
            fact = _Fact(_clean(match.group("value")), section.body_line + offset)
            if not fact.value:
                raise WikiError(f"**{match.group('key')}** has no value", path, fact.line)
            seen = facts.get(key)
            if seen and seen.value != fact.value:
                raise WikiError(
                    f"ambiguous {key}: {fact.value!r} here but {seen.value!r} on line {seen.line}", path, fact.line
                )
            facts.setdefault(key, fact)
    return facts


def parse_tpu(value: str, path: Path, line: int) -> TpuSlice:
    """``v5p, 2x2x2 topology = 8 chips per slice`` -> TpuSlice("v5p", "2x2x2", 8)."""
    match = _TPU_RE.match(value)
    if not match:
        raise WikiError(
            f"cannot read the TPU line {value!r} (expected e.g. 'v5p, 2x2x2 topology = 8 chips')", path, line
        )
    gen = match.group("gen").lower()
    gen = _GENERATION_ALIASES.get(gen, gen)
    if gen not in GENERATIONS:
        raise WikiError(f"unknown TPU generation {gen!r} (known: {', '.join(GENERATIONS)})", path, line)
    topo = match.group("topo") or (_TOPO_RE.search(value).group(0) if _TOPO_RE.search(value) else None)
    if not topo:
        raise WikiError(f"the TPU line {value!r} names no topology such as 2x2x2", path, line)
    topo = topo.lower()
    if any(len(d) > MAX_DIM_DIGITS for d in topo.split("x")) or len(match.group("chips") or "") > MAX_DIM_DIGITS * 3:
        raise WikiError(f"the TPU line names a topology too large to be a slice: {topo[:24]}...", path, line)
    dims = [int(d) for d in topo.split("x")]
    if len(dims) != GENERATIONS[gen].topology_dims or 0 in dims:
        want = "AxBxC" if GENERATIONS[gen].topology_dims == 3 else "AxB"
        raise WikiError(f"{gen} topology must be {want}, not {topo}", path, line)
    chips = math.prod(dims)
    if match.group("chips") and int(match.group("chips")) != chips:
        raise WikiError(
            f"ambiguous TPU line: topology {topo} is {chips} chips but the line says {match.group('chips')}", path, line
        )
    return TpuSlice(gen, topo, chips)


@dataclass(frozen=True)
class _Credentials:
    """How a cluster page says to reach the cluster, with the line it says it on."""

    cluster: str | None
    location: str | None
    project: str | None
    context: str | None
    line: int


def _get_credentials(page: Page, path: Path) -> _Credentials | None:
    """The ``gcloud container clusters get-credentials`` command and the context comment after it."""
    lines = split_lines(page.body)
    start = page.body_line
    for index, raw in enumerate(lines):
        text = raw.rstrip("\r\n")
        at = text.find("get-credentials")
        if at < 0 or "gcloud" not in text[:at]:
            continue
        command, _, comment = text[at:].partition("#")
        end = index
        while command.rstrip().endswith("\\") and end + 1 < len(lines):
            end += 1
            more, _, comment = lines[end].rstrip("\r\n").partition("#")
            command = command.rstrip()[:-1] + " " + more
        try:
            words = shlex.split(command.strip().strip("`"))[1:]
        except ValueError:
            raise WikiError("cannot read the get-credentials command", path, start + index) from None
        cluster = location = project = None
        skip = False
        for pos, word in enumerate(words):
            if skip:
                skip = False
                continue
            key, eq, value = word.partition("=")
            if key in ("--location", "--region", "--zone", "--project"):
                if not eq:
                    value = words[pos + 1] if pos + 1 < len(words) else ""
                    skip = True
                if key == "--project":
                    project = value
                else:
                    location = value
            elif not word.startswith("-") and cluster is None:
                cluster = word
        comments = [comment] + [
            nxt.strip()[1:]
            for nxt in (line.rstrip("\r\n") for line in lines[end + 1 : end + 3])
            if nxt.strip().startswith("#")
        ]
        context = None
        for part in comments:
            gke = _GKE_CONTEXT_RE.search(part)
            named = _CONTEXT_COMMENT_RE.search(part)
            if gke or named:
                context = gke.group(0) if gke else named.group("ctx")
                break
        return _Credentials(cluster, location, project, context, start + index)
    return None


def parse_cluster_file(path: str | Path) -> ClusterFile:
    """Read one cluster file; a :class:`WikiError` names the file and line of anything unreadable."""
    path = Path(path)
    page = load_page(path, parse_yaml=False)
    if not _sections(page):
        raise WikiError("no Topology, Connection or Cluster section", path, page.body_line)
    facts = _collect_facts(page, path)
    creds = _get_credentials(page, path)

    def pick(key: str, cred_value: str | None) -> _Fact | None:
        fact = facts.get(key)
        if fact and cred_value and cred_value != fact.value:
            raise WikiError(
                f"ambiguous {key}: get-credentials says {cred_value!r} but line {fact.line} says {fact.value!r}",
                path,
                creds.line,
            )
        if fact:
            return fact
        return _Fact(cred_value, creds.line) if cred_value else None

    if "tpu" not in facts:
        raise WikiError("no **TPU**: line (e.g. 'v5p, 2x2x2 topology = 8 chips per slice')", path)
    tpu = parse_tpu(facts["tpu"].value, path, facts["tpu"].line)
    name_fact = pick("cluster", creds.cluster if creds else None)
    name = name_fact.value if name_fact else path.stem
    if not NAME_RE.fullmatch(name) or len(name) > 40:
        raise WikiError(
            f"cluster name {name!r} is not a valid GKE cluster name", path, name_fact.line if name_fact else None
        )
    project_fact = pick("project", creds.project if creds else None)
    if not project_fact:
        raise WikiError("no **Project**: line and no --project in a get-credentials command", path)

    zone = facts["zone"].value if "zone" in facts else None
    region = facts["region"].value if "region" in facts else None
    location = facts["location"].value if "location" in facts else (creds.location if creds else None)
    if location:
        if _ZONE_RE.match(location):
            zone = zone or location
        else:
            region = region or location
    if zone:
        zone_match = _ZONE_RE.match(zone)
        if not zone_match:
            raise WikiError(
                f"{zone!r} is not a zone such as europe-west4-b", path, facts["zone"].line if "zone" in facts else None
            )
        if region and region != zone_match.group("region"):
            line = facts["region"].line if "region" in facts else None
            raise WikiError(f"ambiguous location: zone {zone} is not in region {region}", path, line)
        region = zone_match.group("region")
    if not region or not _REGION_RE.match(region):
        raise WikiError("no region or zone (a **Region**:/**Zone**: line or --location in get-credentials)", path)

    context_fact = facts.get("context")
    context = context_fact.value if context_fact else (creds.context if creds else None)
    derived = context is None
    if derived:
        context = f"gke_{project_fact.value}_{creds.location if creds and creds.location else region}_{name}"
    namespace = facts["namespace"].value if "namespace" in facts else "default"
    return ClusterFile(path, name, tpu, project_fact.value, region, zone, context, derived, namespace)


def is_zone(location: str) -> bool:
    """``europe-west4-b`` is a zone, ``europe-west4`` a region."""
    return bool(_ZONE_RE.match(location))


def is_cluster_file(path: Path) -> bool:
    """A ``.env`` markdown file is a cluster file when named ``gke-*`` or it has a Topology section."""
    if path.name.startswith("gke-"):
        return True
    page = load_page(path, parse_yaml=False)
    return any(s.leading_key == "topology" for s in page.sections)


def discover_clusters(
    env_dir: str | Path, generation: str | None = None, topology: str | None = None
) -> list[ClusterFile]:
    """Every cluster file under ``env_dir`` matching the TPU generation and topology (when given), by file name."""
    env_dir = Path(env_dir)
    if not env_dir.is_dir():
        raise WikiError("no such directory (the cluster files live in .env/)", env_dir)
    clusters = []
    for path in sorted(env_dir.glob("*.md")):
        if is_cluster_file(path):
            clusters.append(parse_cluster_file(path))
    seen: dict[tuple[str, str], ClusterFile] = {}
    for cluster in clusters:
        other = seen.setdefault((cluster.context, cluster.name), cluster)
        if other is not cluster:
            raise WikiError(f"cluster {cluster.name} is also described by {other.path.name}", cluster.path)
    if generation:
        generation = _GENERATION_ALIASES.get(generation.lower(), generation.lower())
        clusters = [c for c in clusters if c.tpu.generation == generation]
    if topology:
        clusters = [c for c in clusters if c.tpu.topology == topology.lower()]
    return clusters


def shapes(clusters: list[ClusterFile]) -> list[TpuSlice]:
    """The distinct slices the cluster files offer (seed Step 4's options), smallest first."""
    return sorted({c.tpu for c in clusters}, key=lambda s: (s.generation, s.chips, s.topology))
