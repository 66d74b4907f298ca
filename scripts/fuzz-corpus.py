#!/usr/bin/env python3
"""Regenerates the fuzzers' seed corpora (tests/fuzz/corpus/<target>/) and dictionaries
(tests/fuzz/<surface>.dict) from the repository's own documents: scenarios/, docs/, exercises/,
data/cluster-presets.json and the JSON / YAML snippets inline in tests/test_*.cpp.

    python3 scripts/fuzz-corpus.py        # rewrites both; commit the result

Deterministic: the same sources give the same files. Needs Python 3 with PyYAML (Debian: python3-yaml)
only to write the JSON NodePools as YAML; without it the YAML corpus keeps only the YAML found as YAML.
"""
import glob
import hashlib
import json
import os
import re
import shutil
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FUZZ = os.path.join(ROOT, "tests", "fuzz")
MAX_BYTES = 20 * 1024  # each seed stays small: libFuzzer mutates small inputs faster
PER_TARGET = 60        # a few dozen representative seeds per target

try:
    import yaml  # PyYAML
except ImportError:  # pragma: no cover
    yaml = None


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def load(rel):
    return json.loads(read(rel))


# ---- snippets inline in the C++ tests -------------------------------------------------------------

RAW = re.compile(r'R"([^(\s\\]{0,16})\((.*?)\)\1"', re.S)
# A run of adjacent C string literals ("a" "b"), as the compiler concatenates them.
CSTR = re.compile(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*')
ONE = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def decode_c(body):
    """One C string literal's body as text (escapes \\n, \\t, \\", \\\\, \\xNN, octal)."""
    out = bytearray()
    i = 0
    b = body.encode("utf-8")
    while i < len(b):
        c = b[i]
        if c != 0x5C:
            out.append(c)
            i += 1
            continue
        e = chr(b[i + 1])
        simple = {"n": 10, "t": 9, "r": 13, '"': 34, "'": 39, "\\": 92, "0": 0, "a": 7, "b": 8, "f": 12, "v": 11}
        if e == "x":
            m = re.match(rb"[0-9a-fA-F]+", b[i + 2:])
            out.append(int(m.group(0), 16) & 0xFF)
            i += 2 + len(m.group(0))
        elif e in "01234567" and re.match(rb"[0-7]{1,3}", b[i + 1:]).group(0) != b"0":
            m = re.match(rb"[0-7]{1,3}", b[i + 1:])
            out.append(int(m.group(0), 8) & 0xFF)
            i += 1 + len(m.group(0))
        elif e in simple:
            out.append(simple[e])
            i += 2
        else:
            out += b[i:i + 2]
            i += 2
    return bytes(out)


def test_sources():
    return sorted(glob.glob(os.path.join(ROOT, "tests", "test_*.cpp")))


def raw_json_snippets():
    """(file stem, JSON value) for every raw string in the tests that is JSON."""
    out = []
    for path in test_sources():
        stem = os.path.splitext(os.path.basename(path))[0]
        for m in RAW.finditer(open(path, encoding="utf-8").read()):
            try:
                out.append((stem, json.loads(m.group(2))))
            except ValueError:
                pass
    return out


def c_string_snippets(path):
    """Every run of adjacent C string literals in a test file, decoded (bytes)."""
    src = open(path, encoding="utf-8").read()
    src = RAW.sub('""', src)
    out = []
    for m in CSTR.finditer(src):
        out.append(b"".join(decode_c(x.group(1)) for x in ONE.finditer(m.group(0))))
    return out


def doc_blocks(lang):
    """Bodies of ```lang blocks in docs/*.md."""
    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        for m in re.finditer(r"```" + lang + r"\n(.*?)```", open(path, encoding="utf-8").read(), re.S):
            out.append((os.path.splitext(os.path.basename(path))[0], m.group(1)))
    return out


# ---- classifying and wrapping snippets ------------------------------------------------------------

SCENARIO_KEYS = {"seed", "duration_s", "router", "workload", "engine", "cold_start", "metrics", "autoscaler",
                 "slo", "cost", "output", "cluster", "pools"}
HPA_SPEC_KEYS = {"minReplicas", "maxReplicas", "metrics", "behavior", "scaleTargetRef"}
POD_KEYS = {"cpu", "memory", "gpus", "tolerations", "nodeSelector", "affinity", "labels", "annotations",
            "schedulerName", "priorityClassName", "priority"}
PDB_KEYS = {"minAvailable", "maxUnavailable", "unhealthyPodEvictionPolicy"}
DISRUPTION_KEYS = {"consolidationPolicy", "consolidateAfter", "budgets"}
BUDGET_KEYS = {"nodes", "reasons", "schedule", "duration"}
REQUIREMENT_KEYS = {"key", "operator", "values", "minValues"}
TAINT_KEYS = {"key", "value", "effect"}


def is_nodepool(v):
    return isinstance(v, dict) and v.get("kind") == "NodePool"


def nodepool_template(name="gpu"):
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
                "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]}]}}}}


def nodepool_from_fragment(v):
    """A NodePool around a fragment the tests check on its own, or None."""
    if is_nodepool(v):
        return v
    np = nodepool_template()
    spec = np["spec"]
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        keys = set().union(*[set(x) for x in v])
        if keys <= BUDGET_KEYS:
            spec["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h", "budgets": v}
        elif "operator" in keys and keys <= REQUIREMENT_KEYS:
            spec["template"]["spec"]["requirements"] = v
        elif "effect" in keys and keys <= TAINT_KEYS:
            spec["template"]["spec"]["taints"] = v
        else:
            return None
        return np
    if isinstance(v, dict) and v:
        keys = set(v)
        if keys <= DISRUPTION_KEYS:
            spec["disruption"] = v
        elif keys <= BUDGET_KEYS:
            spec["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h", "budgets": [v]}
        elif "operator" in keys and keys <= REQUIREMENT_KEYS:
            spec["template"]["spec"]["requirements"].append(v)
        elif keys <= {"name", "labels", "annotations"} and "name" in keys:
            np["metadata"] = v
        elif all("/" in k or k in ("cpu", "memory", "nodes") for k in keys):
            spec["limits"] = v
        else:
            return None
        return np
    return None


def scenario_from_fragment(v):
    """A short scenario around a test snippet, or None."""
    short = {"duration_s": 600}
    if isinstance(v, dict) and v and set(v) <= SCENARIO_KEYS:
        return v
    if is_nodepool(v):
        return dict(short, cluster={"provisioner": "karpenter", "nodepools": [v]})
    if isinstance(v, dict) and v:
        keys = set(v)
        if keys & {"maxReplicas"} and keys <= HPA_SPEC_KEYS:
            return dict(short, autoscaler={"strategy": "custom", "hpa": v})
        if all(k.startswith("--") for k in keys):
            return dict(short, cluster={"provisioner": "cluster_autoscaler",
                                        "cluster_autoscaler": {"flags": v, "nodeGroups": [
                                            {"name": "gpu", "instanceType": "p5.48xlarge", "maxSize": 4}]}})
        if keys <= {"flags", "nodeGroups"}:
            # The tests' node groups use their own catalogue's "big" and "small"; use the default one's.
            text = json.dumps(v).replace('"big"', '"p5.48xlarge"').replace('"small"', '"p5.4xlarge"')
            return dict(short, cluster={"provisioner": "cluster_autoscaler", "cluster_autoscaler": json.loads(text)})
        if keys <= PDB_KEYS:
            return dict(short, cluster={"preset": "karpenter_when_empty", "inference_pdb": v})
        if keys <= POD_KEYS:
            return dict(short, cluster={"preset": "karpenter_when_empty", "inference_pod": v})
    if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
        keys = set().union(*[set(x) for x in v])
        if keys <= {"duration_s", "rate_rps"}:
            return dict(short, workload={"preset": "custom", "phases": v})
        if "instance_type" in keys:
            return dict(short, cluster={"preset": "karpenter_when_empty", "initial_nodes": v})
    np = nodepool_from_fragment(v)
    if np is not None:
        return dict(short, cluster={"provisioner": "karpenter", "nodepools": [np]})
    return None


def hpa_from_fragment(v):
    observed = {"specReplicas": 2, "statusReplicas": 2,
                "pods": [{"name": "llama-0", "phase": "Running", "readyCondition": "True", "startAgeSeconds": 600,
                          "requests": {"cpu": "4"}, "metrics": {"cpu": "2500m", "q": "3"}},
                         {"name": "llama-1", "phase": "Pending", "readyCondition": "None", "startAgeSeconds": None}],
                "externalMetrics": {"q": {"value": 20}}, "objectMetrics": {}}
    if isinstance(v, dict) and "spec" in v and set(v) <= {"spec", "observed", "memory", "controller", "extra"}:
        return v
    if isinstance(v, dict) and "maxReplicas" in v and set(v) <= HPA_SPEC_KEYS:
        observed = dict(observed)
        observed.pop("objectMetrics")
        return {"spec": v, "observed": observed}
    if isinstance(v, dict) and "specReplicas" in v:
        return {"spec": {"maxReplicas": 3}, "observed": v}
    return None


# ---- writing ---------------------------------------------------------------------------------------

def dump(v):
    return (json.dumps(v, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def to_yaml(v):
    if yaml is None:
        return None
    return yaml.safe_dump(v, sort_keys=False, default_flow_style=False, allow_unicode=True).encode("utf-8")


class Corpus:
    def __init__(self, target):
        self.target = target
        self.items = []  # (name, bytes)
        self.seen = set()

    def add(self, name, data):
        if isinstance(data, str):
            data = data.encode("utf-8")
        if data is None or len(data) > MAX_BYTES or len(data) == 0:
            return
        digest = hashlib.sha1(data).hexdigest()
        if digest in self.seen:
            return
        self.seen.add(digest)
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
        self.items.append((name, data))

    def write(self):
        out = os.path.join(FUZZ, "corpus", self.target)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        kept = self.items[:PER_TARGET]
        names = set()
        for i, (name, data) in enumerate(kept):
            fname = "%02d-%s" % (i, name)
            assert fname not in names
            names.add(fname)
            with open(os.path.join(out, fname), "wb") as f:
                f.write(data)
        print("%-20s %3d seeds, %6d bytes" % (self.target, len(kept), sum(len(d) for _, d in kept)))


def spread(items, n):
    """At most n of items, evenly spaced (keeps the first and some of every source)."""
    if len(items) <= n:
        return items
    step = len(items) / n
    return [items[int(i * step)] for i in range(n)]


# ---- the corpora ------------------------------------------------------------------------------------

def exercise(prefix):
    path = sorted(glob.glob(os.path.join(ROOT, "exercises", prefix + "*.json")))[0]
    return json.load(open(path, encoding="utf-8"))


def merge(base, patch):
    if not isinstance(base, dict) or not isinstance(patch, dict):
        return patch
    out = dict(base)
    for k, v in patch.items():
        out[k] = merge(out[k], v) if k in out else v
    return out


def all_nodepools(snippets):
    pools = []
    for stem, v in snippets:
        np = nodepool_from_fragment(v)
        if np is not None:
            pools.append((stem, np))
    for preset in load("data/cluster-presets.json")["presets"]:
        for np in preset["cluster"].get("nodepools", []):
            pools.append(("preset-" + preset["name"], np))
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.json"))):
        for np in json.load(open(path)).get("cluster", {}).get("nodepools", []):
            pools.append(("scenario-" + os.path.splitext(os.path.basename(path))[0], np))
    pools.append(("ex2-reference", exercise("ex2-")["reference_nodepool"]))
    return pools


# NodePools written the way people write them (Karpenter's own docs and real clusters): a stream with the
# EC2NodeClass, comments, anchors and flow lists, quoted and unquoted scalars.
REAL_YAML = [
    ("gpu-with-nodeclass", """\
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata:
  name: gpu
spec:
  amiSelectorTerms:
    - alias: al2023@latest
  role: KarpenterNodeRole-lab
  subnetSelectorTerms:
    - tags: {karpenter.sh/discovery: lab}
  securityGroupSelectorTerms:
    - tags: {karpenter.sh/discovery: lab}
  blockDeviceMappings:
    - deviceName: /dev/xvda
      ebs: {volumeSize: 500Gi, volumeType: gp3}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: gpu-h100
  labels: {team: ml}
spec:
  weight: 50
  limits:
    nvidia.com/gpu: "64"
    cpu: 2000
    memory: 8000Gi
  template:
    metadata:
      labels:
        workload: llm-inference
    spec:
      nodeClassRef:
        group: karpenter.k8s.aws
        kind: EC2NodeClass
        name: gpu
      requirements:
        - key: karpenter.k8s.aws/instance-family
          operator: In
          values: [p5, p4d]
        - key: karpenter.sh/capacity-type
          operator: In
          values: ["on-demand"]
        - key: karpenter.k8s.aws/instance-gpu-count
          operator: Gt
          values: ["0"]
        - key: topology.kubernetes.io/zone
          operator: In
          values: [us-east-1a, us-east-1b]
          minValues: 1
      taints:
        - key: nvidia.com/gpu
          value: "true"
          effect: NoSchedule
      expireAfter: 720h
      terminationGracePeriod: 48h
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 1h
    budgets:
      - nodes: "10%"
      - nodes: "0"
        schedule: "0 9 * * mon-fri"
        duration: 8h
        reasons: [Underutilized, Drifted]
"""),
    ("anchors", """\
# the same requirement twice, through an anchor
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot-batch}
spec:
  template:
    spec:
      nodeClassRef: &ref {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - &spot
          key: karpenter.sh/capacity-type
          operator: In
          values: [spot, on-demand]
        - key: kubernetes.io/arch
          operator: In
          values: [amd64]
      taints:
        - {key: nvidia.com/gpu, effect: NoSchedule}
  disruption:
    consolidationPolicy: WhenEmptyOrUnderutilized
    consolidateAfter: 30s
"""),
    ("flow", '{"apiVersion": "karpenter.sh/v1", kind: NodePool, metadata: {name: flow}, spec: {template: {spec: '
             '{nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}, requirements: [{key: '
             'node.kubernetes.io/instance-type, operator: In, values: [g6e.12xlarge]}]}}, disruption: '
             '{consolidationPolicy: WhenEmpty, consolidateAfter: Never}}}\n'),
    ("block-scalars-tags", """\
%YAML 1.1
--- !!map
apiVersion: !!str karpenter.sh/v1
kind: NodePool
metadata:
  name: >-
    gpu-l40s
  annotations:
    note: |
      two
      lines
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - key: karpenter.k8s.aws/instance-gpu-name
        operator: In
        values: ['l40s']
      expireAfter: Never
  disruption:
    consolidateAfter: 0s
    budgets:
    - nodes: 100%
      reasons: [Empty]
...
"""),
    ("v1beta1-leftovers", """\
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: old
spec:
  template:
    spec:
      nodeClassRef:
        name: default
      kubelet:
        maxPods: 110
  disruption:
    consolidationPolicy: WhenUnderutilized
    expireAfter: 720h
"""),
]


def main():
    snippets = raw_json_snippets()
    for stem, body in doc_blocks("json"):
        try:
            snippets.append(("doc-" + stem, json.loads(body)))
        except ValueError:
            pass
    nodepools = all_nodepools(snippets)
    ex1, ex2, ex5 = exercise("ex1-"), exercise("ex2-"), exercise("ex5-")

    # fuzz_scenario: the repository's scenarios, the exercises' runs, then the tests' snippets.
    # The fuzz target's work budget is small (fuzz_scenario.cpp): each long scenario also goes in cut to
    # 10 simulated minutes, so that it runs instead of being refused by the up-front estimate.
    sc = Corpus("fuzz_scenario")
    whole = []
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.json"))):
        whole.append(("scenarios-" + os.path.splitext(os.path.basename(path))[0], json.load(open(path))))
    for run, r in sorted(ex1["runs"].items()):
        whole.append(("ex1-" + run, merge(ex1["base_scenario"], r["scenario"])))
    ex2_day = merge(ex2["base_scenario"], {})
    ex2_day["cluster"] = dict(ex2_day["cluster"], nodepools=[ex2["reference_nodepool"]] + ex2_day["cluster"]["nodepools"])
    whole.append(("ex2-reference-day", ex2_day))
    # The same day on a pool that allows spot, with a spot reclaim and the shortage after it (at 5 min,
    # inside the 10-minute cut too).
    spot_day = json.loads(json.dumps(ex2_day))
    for req in spot_day["cluster"]["nodepools"][0]["spec"]["template"]["spec"]["requirements"]:
        if req["key"] == "karpenter.sh/capacity-type":
            req["values"] = ["spot", "on-demand"]
    spot_day["cluster"]["spot_reclaims"] = [{"at_s": 300, "instance_type": "p5.48xlarge", "fraction": 0.5}]
    spot_day["cluster"]["insufficient_capacity"] = [
        {"instance_type": "p5.48xlarge", "capacity_type": "spot", "probability": 1, "from_s": 300, "until_s": 3900}]
    whole.append(("ex2-spot-reclaim-day", spot_day))
    for run, r in sorted(ex5["runs"].items()):
        week = json.loads(json.dumps(ex5["base_scenario"]))
        week["cluster"]["nodepools"][0]["spec"]["disruption"] = r["disruption"]
        whole.append(("ex5-" + run, week))
    for path in sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.json"))):
        sc.add("scenarios-" + os.path.basename(path), open(path, "rb").read())
    for name, v in whole:
        if not name.startswith("scenarios-"):
            sc.add(name + ".json", dump(v))
        sc.add(name + "-10min.json", dump(dict(v, duration_s=min(v.get("duration_s", 3600), 600))))
    for preset in load("data/cluster-presets.json")["presets"]:
        sc.add("preset-" + preset["name"] + ".json", dump({"duration_s": 1800, "cluster": {"preset": preset["name"]}}))
    wrapped = [(stem, scenario_from_fragment(v)) for stem, v in snippets]
    for stem, v in spread([w for w in wrapped if w[1] is not None], PER_TARGET - len(sc.items)):
        sc.add(stem + ".json", dump(v))
    sc.write()

    # fuzz_schedule: the documented examples (YAML, as JSON), then KAI's fixtures' snapshots, the small first.
    sch = Corpus("fuzz_schedule")
    if yaml:
        for path in sorted(glob.glob(os.path.join(ROOT, "docs", "examples", "schedule-*.yaml"))):
            sch.add("docs-" + os.path.splitext(os.path.basename(path))[0] + ".json", dump(yaml.safe_load(open(path))))
    fixtures = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "kai", "*.json"))):
        v = json.load(open(path))
        if isinstance(v, dict) and isinstance(v.get("snapshot"), dict):
            snap = dict(v["snapshot"])
            if "actions" in v:
                snap["kai"] = dict(snap.get("kai", {}), actions=v["actions"])
            fixtures.append(("kai-" + os.path.splitext(os.path.basename(path))[0], snap))
    for stem, v in spread(fixtures, PER_TARGET - len(sch.items)):
        sch.add(stem + ".json", dump(v))
    sch.write()

    # fuzz_hpa: the documented example, the tests' documents and spec fragments in a document.
    hpa = Corpus("fuzz_hpa")
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "examples", "hpa-*.json"))):
        hpa.add("docs-" + os.path.basename(path), open(path, "rb").read())
    docs = [(stem, hpa_from_fragment(v)) for stem, v in snippets]
    scenario_hpas = []  # the custom HPAs of the tests' scenarios, as documents
    for stem, v in snippets:
        autoscaler = v.get("autoscaler") if isinstance(v, dict) else None
        if isinstance(autoscaler, dict) and isinstance(autoscaler.get("hpa"), dict):
            scenario_hpas.append((stem + "-scenario", hpa_from_fragment(autoscaler["hpa"])))
    for stem, v in spread([d for d in docs + scenario_hpas if d[1] is not None], PER_TARGET - len(hpa.items)):
        hpa.add(stem + ".json", dump(v))
    hpa.write()

    # fuzz_nodepool_json: every NodePool the repository holds (tests, presets, scenarios, exercise 2).
    npj = Corpus("fuzz_nodepool_json")
    starter = yaml.safe_load(ex2["starter_yaml"]) if yaml else None
    if starter:
        npj.add("ex2-starter.json", dump(starter))
    for stem, v in spread(nodepools, PER_TARGET - 1):
        npj.add(stem + ".json", dump(v))
    npj.write()

    # fuzz_nodepool_yaml: exercise 2's starter, real-world streams, the YAML tests' texts, the pools as YAML.
    npy = Corpus("fuzz_nodepool_yaml")
    npy.add("ex2-starter.yaml", ex2["starter_yaml"])
    for name, text in REAL_YAML:
        npy.add("real-" + name + ".yaml", text)
    for stem, body in doc_blocks("yaml"):
        npy.add("doc-" + stem + ".yaml", body)
    yaml_tests = []
    for path in test_sources():
        if "yaml" not in os.path.basename(path):
            continue
        stem = os.path.splitext(os.path.basename(path))[0]
        for text in c_string_snippets(path):
            # YAML texts only (lines of a mapping or a list, a document marker), not the expected messages.
            lines = b"\n" in text and (b": " in text or b":\n" in text or b"- " in text)
            if len(text) >= 6 and (lines or text.startswith((b"---", b"[", b"{"))):
                yaml_tests.append((stem, text))
    half = (PER_TARGET - len(npy.items)) // 2
    for stem, text in spread(yaml_tests, half):
        npy.add(stem + ".yaml", text)
    for stem, v in spread(nodepools, PER_TARGET - len(npy.items)):
        npy.add(stem + ".yaml", to_yaml(v))
    npy.write()

    # fuzz_answers: first byte '0' → exercise 1, '1' → exercise 2, '2' → exercise 5 (byte % 3).
    ans = Corpus("fuzz_answers")
    b_ids = [c["id"] for q in ex1["questions"] if q["id"] == "b" for c in q["choices"]]
    ans.add("ex1-full", "0" + json.dumps({"a": 0, "b": "empty_queue", "c": 637}))
    ans.add("ex1-partial", "0" + json.dumps({"a": 12}))
    ans.add("ex1-empty", "0{}")
    ans.add("ex1-wrong-type", "0" + json.dumps({"a": "twelve", "b": 3}))
    ans.add("ex1-extra-key", "0" + json.dumps({"a": 1, "zzz": 1}))
    for i, b in enumerate(b_ids):
        ans.add("ex1-b-" + b, "0" + json.dumps({"a": i * 97, "b": b, "c": 10_000_000 - i}))
    ans.add("ex2-reference", "1" + json.dumps({"nodepool": ex2["reference_nodepool"]}))
    if starter:
        ans.add("ex2-starter", "1" + json.dumps({"nodepool": starter}))
    ans.add("ex2-empty", "1{}")
    ans.add("ex2-general", "1" + json.dumps({"nodepool": nodepool_template("general")}))
    for stem, v in spread(nodepools, 14):
        ans.add("ex2-" + stem, "1" + json.dumps({"nodepool": v}))
    ans.add("ex5-baseline", "2" + json.dumps({"daily_usd": 863.72, "monthly_usd": 25911.7}))
    ans.add("ex5-daily", "2" + json.dumps({"daily_usd": -120.5}))
    ans.add("ex5-bounds", "2" + json.dumps({"daily_usd": 1e9, "monthly_usd": -1e11}))
    ans.add("ex5-string", "2" + json.dumps({"daily_usd": "100", "monthly_usd": True}))
    ans.add("ex5-null", "2" + json.dumps({"daily_usd": None}))
    ans.add("ex3-full", "3" + json.dumps({"layer": "kai-scheduler", "cause": "queue_limit", "evidence": ["x"], "fix": {"id": "raise_limit", "value": 8}}))
    ans.add("ex4-full", "4" + json.dumps({"prefill": "queue_depth", "decode": "kv_cache", "justification": "prefill queues; decode fills its KV"}))
    ans.add("ex4-unknown", "4" + json.dumps({"prefill": "cpu"}))
    ans.add("ex4-unicode", "4" + json.dumps({"decode": "gpu_memory", "justification": "\u00e9t\u00e9 \U0001F600"}))
    ans.write()

    # fuzz_plan: the plan designer's inputs (docs/plan.md), as written and with mistakes.
    plan = Corpus("fuzz_plan")
    plan.add("empty", "{}")
    plan.add("full", json.dumps({"topology": {"instance_types": ["p5.48xlarge", "p5en.48xlarge"], "capacity_types": ["on-demand", "spot"],
                                              "max_nodes": 4, "spot_interruptions_per_node_hour": 0.05, "zones": ["us-east-1a"], "racks": 2},
                                 "workload": {"engine_profile": "llama-3.3-70b-fp8-tp2-h100-sxm5", "serving": "aggregated", "average_rps": 0.5,
                                              "burst_factor": 4, "burst_s": 900, "prompt_tokens": 2000, "output_tokens": 300, "timeout_s": 60,
                                              "what_if_burst": 1.5},
                                 "slo": {"ttft_p99_s": 2, "itl_s": 0.05, "attainment": 0.99}, "budget_usd_per_hour": 300,
                                 "tenants": {"training_gpus": 8}, "seed": 7}))
    plan.add("refused", json.dumps({"topology": {"instance_types": ["p5.48xlarge"], "max_nodes": 1}}))
    plan.add("spot-no-rate", json.dumps({"topology": {"capacity_types": ["spot"]}}))
    plan.add("405b", json.dumps({"workload": {"engine_profile": "llama-3.1-405b-bf16-tp8-pp2-h100-sxm5"}}))
    plan.add("wrong-types", json.dumps({"topology": {"instance_types": "p5.48xlarge", "max_nodes": "4"}, "slo": []}))
    plan.add("duplicates", json.dumps({"topology": {"instance_types": ["p5.48xlarge", "p5.48xlarge"]}}))
    plan.add("disaggregated", json.dumps({"workload": {"serving": "disaggregated", "average_concurrency": 8}}))
    plan.add("choices", json.dumps({"topology": {"racks": 2, "nvlink_domain_nodes": 2, "max_nodes": 4},
                                     "choices": {"signal": "kv_cache", "gang": False, "consolidation_policy": "WhenEmpty"}}))
    plan.add("rate-and-concurrency", json.dumps({"workload": {"average_rps": 1, "average_concurrency": 8}}))
    plan.write()

    # fuzz_seed: seeds from URLs and command lines, in range and not.
    seed = Corpus("fuzz_seed")
    for s in ["0", "1", "4", "7", "42", "1000", "123456789", "9007199254740992", "9007199254740993",
              "9999999999999999", "18446744073709551616", "-1", "01", "1e3", " 1", "0x10", "1.0"]:
        seed.add("seed-" + s, s)
    seed.write()

    write_dicts(snippets, nodepools)


# ---- dictionaries ----------------------------------------------------------------------------------

def quote(s):
    """A libFuzzer dictionary value: printable ASCII as is, \\\\ and \\" escaped, the rest \\xNN.
    Characters below U+0100 stand for one byte each (so "\\xff" is the byte 0xFF)."""
    out = []
    for b in s.encode("latin-1"):
        c = chr(b)
        if c in '\\"':
            out.append("\\" + c)
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append("\\x%02x" % b)
    return '"' + "".join(out) + '"'


WORD = re.compile(r'"([A-Za-z_\-.:/%@0-9][A-Za-z0-9_\-.:/%@]{1,62})"')


def source_words(patterns):
    """String literals in core sources that look like names: field names and enum values."""
    words = set()
    for pattern in patterns:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            src = open(path, encoding="utf-8").read()
            src = re.sub(r"//[^\n]*", "", src)
            words.update(m.group(1) for m in WORD.finditer(src))
    return words


def json_words(values):
    words = set()

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                words.add(k)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
        elif isinstance(v, str) and 0 < len(v) <= 48 and " " not in v and v.isascii():
            words.add(v)
    for v in values:
        walk(v)
    return words


JSON_TOKENS = ["{", "}", "[", "]", ":", ",", '":', '": ', '"', "true", "false", "null", "0", "-1", "1e308", "1e400",
               "-0.0", "0.5", "1.5", "9007199254740993", "18446744073709551616", "\\u0000", "\\ud800", "\\n",
               "\xc3\xa9", "\xff"]
QUANTITIES = ["500m", "1.5", "10Ki", "100Mi", "200Gi", "1Ti", "1e3", "1E", "64", "0.001", "10%", "100%", "25%", "0"]
DURATIONS = ["0s", "30s", "10m", "1h", "1h30m", "720h", "48h", "1ms", "1us", "1ns", "Never", "1hr", "-1s", "1.5h"]
YAML_TOKENS = ["---", "...", "- ", ": ", "? ", "#", "&a ", "*a", "!!str ", "!!int ", "!!map", "!!seq", "%YAML 1.1",
               "|", ">", "|-", ">+", "'", '"', "~", "yes", "no", "on", "off", "0x1F", "010", "0b101", "0o17", ".inf",
               ".nan", "1_000", "<<: *a", "\t", "\n  ", "\n- ", "{", "}", "[", "]", ",", "\xef\xbb\xbf"]


def write_dict(name, words, tokens):
    entries = []
    seen = set()
    for w in list(tokens) + sorted(words):
        if w in seen or not w:
            continue
        seen.add(w)
        entries.append(w)
    path = os.path.join(FUZZ, name + ".dict")
    with open(path, "w", encoding="ascii") as f:
        f.write("# libFuzzer dictionary for tests/fuzz (regenerate with scripts/fuzz-corpus.py).\n")
        for i, w in enumerate(entries):
            f.write("k%d=%s\n" % (i, quote(w)))
    print("%-20s %3d entries" % (name + ".dict", len(entries)))


def quoted(words):
    return {'"' + w + '"' for w in words}


def write_dicts(snippets, nodepools):
    scenario_src = source_words(["core/src/scenario/*.cpp", "core/src/serving/*.cpp", "core/src/k8s/*.cpp",
                                 "core/src/autoscaling/hpa_json.cpp", "core/src/provisioning/**/*.cpp",
                                 "core/src/sim/cluster_model.cpp"])
    hpa_src = source_words(["core/src/autoscaling/hpa_json.cpp", "core/src/autoscaling/hpa.cpp", "core/src/k8s/quantity.cpp"])
    nodepool_src = source_words(["core/src/provisioning/karpenter/nodepool*.cpp", "core/src/k8s/*.cpp"])
    scenarios = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(ROOT, "scenarios", "*.json")))]
    pools = [v for _, v in nodepools]
    hpa_docs = [load("docs/examples/hpa-keda.json")] + [hpa_from_fragment(v) for _, v in snippets if hpa_from_fragment(v)]

    common = JSON_TOKENS + QUANTITIES + DURATIONS
    write_dict("scenario", quoted(scenario_src | json_words(scenarios)), common)
    write_dict("hpa", quoted(hpa_src | json_words(hpa_docs)), common)
    write_dict("nodepool_json", quoted(nodepool_src | json_words(pools)), common)
    schedule_src = source_words(["core/src/scheduling/snapshot.cpp", "core/src/scheduling/kube_scheduler_config.cpp", "core/src/k8s/*.cpp"])
    loaded = [json.load(open(p)) for p in sorted(glob.glob(os.path.join(ROOT, "tests", "data", "kai", "*.json")))]
    snapshots = [v.get("snapshot") for v in loaded if isinstance(v, dict)]
    write_dict("schedule", quoted(schedule_src | json_words([v for v in snapshots if v])), common)
    yaml_words = nodepool_src | json_words(pools)
    write_dict("nodepool_yaml", {w + ": " for w in yaml_words} | yaml_words, YAML_TOKENS + QUANTITIES + DURATIONS)
    ex1 = exercise("ex1-")
    b_ids = [c["id"] for q in ex1["questions"] if q["id"] == "b" for c in q["choices"]]
    ex4 = exercise("ex4-")
    write_dict("answers", quoted({"a", "b", "c", "nodepool", "daily_usd", "monthly_usd", "layer", "cause", "evidence", "fix", "prefill",
                                  "decode", "justification"} | set(b_ids) | {s["id"] for s in ex4["signals"]} | nodepool_src),
               ["0{", "1{", "2{", "3{", "4{"] + common)
    write_dict("plan", quoted(source_words(["core/src/plan/*.cpp"]) | {t["name"] for t in load("data/instance-types.json")}), common)
    write_dict("seed", set(), ["0", "1", "9", "9007199254740992", "9007199254740993", "18446744073709551615", "-", "+",
                                " ", "e", "x", ".", "\x00"])


if __name__ == "__main__":
    sys.exit(main())
