#!/usr/bin/env python3
"""Fits the work budget's weights (core/src/sim/budget.hpp, WorkCounts::k*) to measured run times.

Input: the CSV the hidden test prints,
  GPUSCALE_CALIBRATE=DIR build/tests/core_tests "[.calibration]" | grep , > runs.csv
  python3 scripts/calibrate-budget.py runs.csv
Model: ms = sum_i weight_i * count_i, weights >= 0, fitted by non-negative least squares on the
relative error (each run weighs the same whatever its length). Prints the weights in thousandths of
a work unit (1 unit = 1 microsecond) and each run's predicted against measured time.
"""
import csv
import sys

TERMS = ["events", "scrapes", "syncs", "cluster", "rows", "sequences", "router_visits", "replica_visits", "pod_views", "decisions", "detailed", "fits"]


def fit(rows):
    # Coordinate descent on sum(((pred - ms) / ms)^2) with w >= 0: small enough to need no numpy.
    x = [[float(r[t]) / float(r["ms"]) for t in TERMS] for r in rows]
    w = [1e-3] * len(TERMS)
    for _ in range(20000):
        for j in range(len(TERMS)):
            num = den = 0.0
            for xi in x:
                rest = sum(w[k] * xi[k] for k in range(len(TERMS)) if k != j)
                num += xi[j] * (1.0 - rest)
                den += xi[j] * xi[j]
            w[j] = max(0.0, num / den) if den > 0 else 0.0
    return w


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    w = fit(rows)
    print("weights (thousandths of a unit of 1 us):")
    for t, v in zip(TERMS, w):
        print(f"  {t:15s} {v * 1e6:10.1f}")
    print(f"{'scenario':34s} {'ms':>9s} {'predicted':>10s} {'ratio':>6s}")
    for r in rows:
        pred = sum(wi * float(r[t]) for wi, t in zip(w, TERMS))
        print(f"{r['scenario']:34s} {float(r['ms']):9.1f} {pred:10.1f} {pred / float(r['ms']):6.2f}")


if __name__ == "__main__":
    main()
