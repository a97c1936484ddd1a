"""Runs PyPI's scim2-tester (every check it has) against a running coe.

Usage: python check.py BASE_URL TOKEN
Prints one line per check, `STATUS<TAB>title<TAB>resource type<TAB>reason`, then
`checks: N` and exits 0 whatever the results: the Rust test reads the lines and says
which failed (tests/api/scim.rs).
"""

import sys

from httpx2 import Client
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import check_server


def main() -> None:
    base, token = sys.argv[1], sys.argv[2]
    http = Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    client = SyncSCIMClient(http)
    results = check_server(client)
    for r in results:
        reason = (r.reason or "").replace("\n", " ").replace("\t", " ")
        print(f"{r.status.name}\t{r.title}\t{r.resource_type or ''}\t{reason}")
    print(f"checks: {len(results)}")


if __name__ == "__main__":
    main()
