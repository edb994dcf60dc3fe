"""DuckDB baseline of `npm run bench analytics -- --scaling` (bench/_analytics-scaling.ts).

Reads a JSON job on stdin: {"csv": path, "parquet": path, "runs": n, "queries": [{"label", "sql"}]}.
Converts the CSV export (ts_us, type, user_id, plan, country, amount) to Parquet once (kept beside it),
then runs each query on a view `ev` over the Parquet file: a first run, then `runs` more; prints one
JSON object: {"convertS", "results": [{"label", "first", "median", "rows"}]} (ms; timestamps in rows
as {"$ts": ISO}). Needs `pip install duckdb`.
"""
import datetime
import decimal
import json
import os
import statistics
import sys
import time

import duckdb


def cell(v):
    if isinstance(v, datetime.datetime):
        return {"$ts": v.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"}
    if isinstance(v, decimal.Decimal):
        return float(v)
    return v


def main():
    job = json.load(sys.stdin)
    con = duckdb.connect()
    convert = 0.0
    if not os.path.exists(job["parquet"]):
        t0 = time.perf_counter()
        con.execute(
            f"""COPY (SELECT make_timestamp(ts_us) AS ts, type, user_id, plan, country, amount
                  FROM read_csv('{job["csv"]}', header = false,
                    columns = {{'ts_us': 'BIGINT', 'type': 'VARCHAR', 'user_id': 'VARCHAR', 'plan': 'VARCHAR', 'country': 'VARCHAR', 'amount': 'DOUBLE'}})
                  ORDER BY ts)
                TO '{job["parquet"]}' (FORMAT parquet)"""
        )
        convert = time.perf_counter() - t0
    con.execute(f"CREATE VIEW ev AS SELECT * FROM read_parquet('{job['parquet']}')")
    out = []
    for q in job["queries"]:
        t0 = time.perf_counter()
        cur = con.execute(q["sql"])
        rows = cur.fetchall()
        first = (time.perf_counter() - t0) * 1000
        names = [d[0] for d in cur.description]
        ms = []
        for _ in range(job["runs"]):
            t0 = time.perf_counter()
            con.execute(q["sql"]).fetchall()
            ms.append((time.perf_counter() - t0) * 1000)
        out.append(
            {
                "label": q["label"],
                "first": first,
                "median": statistics.median_low(ms) if ms else first,
                "rows": [{n: cell(v) for n, v in zip(names, r)} for r in rows],
            }
        )
    json.dump({"convertS": convert, "results": out}, sys.stdout)


main()
