#!/usr/bin/env python3
"""Create a bot user, a reader user and a shared room on a test Synapse.

    setup_room.py PORT DIR [--bot NAME] [--reader NAME] [--password PW]
                           [--secret S] [--admin-bot] [--timings] [--member NAME]...

Stdlib only (urllib).  Reads the registration shared secret from DIR/shared_secret
(written by start.sh) unless --secret is given.

Steps:
 1. register bot + reader with the admin shared-secret API
    (GET then POST /_synapse/admin/v1/register, HMAC-SHA1 over
    nonce\\0user\\0password\\0admin|notadmin).  A user that already exists
    (M_USER_IN_USE, e.g. on a second run on the same DIR) is just logged in.
 2. log both in (POST /_matrix/client/v3/login, m.login.password) -> tokens
 3. bot: POST /createRoom (private_chat), POST /rooms/{id}/invite reader
 4. reader: POST /rooms/{id}/join; each --member likewise
Prints one JSON line:
 {"room_id", "bot_token", "reader_token", "bot_user_id", "reader_user_id",
  "base_url", "members": {name: access token}}
"""
import argparse
import hashlib
import hmac
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request


class MatrixError(Exception):
    def __init__(self, status, body):
        self.status, self.body = status, body
        super().__init__(f"HTTP {status}: {body}")

    @property
    def errcode(self):
        return self.body.get("errcode") if isinstance(self.body, dict) else None


def call(base, method, path, body=None, token=None, timeout=30):
    """One Matrix API call; returns the decoded JSON or raises MatrixError."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = raw.decode(errors="replace")
        raise MatrixError(e.code, payload) from None


def register(base, secret, user, password, admin=False):
    nonce = call(base, "GET", "/_synapse/admin/v1/register")["nonce"]
    mac = hmac.new(secret.encode(), digestmod=hashlib.sha1)
    mac.update(b"\x00".join([nonce.encode(), user.encode(), password.encode(),
                             b"admin" if admin else b"notadmin"]))
    return call(base, "POST", "/_synapse/admin/v1/register", {
        "nonce": nonce, "username": user, "password": password,
        "admin": admin, "mac": mac.hexdigest()})


def login(base, user, password, device_id=None):
    body = {"type": "m.login.password",
            "identifier": {"type": "m.id.user", "user": user},
            "password": password}
    if device_id:
        body["device_id"] = device_id
    return call(base, "POST", "/_matrix/client/v3/login", body)


def q(s):
    return urllib.parse.quote(s, safe="")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("dir")
    ap.add_argument("--bot", default="bot")
    ap.add_argument("--reader", default="reader")
    ap.add_argument("--password", default="test-password-123")
    ap.add_argument("--secret")
    ap.add_argument("--admin-bot", action="store_true")
    ap.add_argument("--room-name", default="test room")
    ap.add_argument("--member", action="append", default=[],
                    help="another user to register, invite and join (repeatable)")
    ap.add_argument("--timings", action="store_true",
                    help="print per-step timings on stderr")
    a = ap.parse_args()

    base = f"http://127.0.0.1:{a.port}"
    secret = a.secret
    if secret is None:
        with open(os.path.join(a.dir, "shared_secret")) as f:
            secret = f.read().strip()

    t0 = last = time.monotonic()

    def step(name):
        nonlocal last
        now = time.monotonic()
        if a.timings:
            print(f"  {name}: {1000 * (now - last):.0f} ms", file=sys.stderr)
        last = now

    for user, adm in [(a.bot, a.admin_bot), (a.reader, False)] + [(m, False) for m in a.member]:
        try:
            register(base, secret, user, a.password, adm)
        except MatrixError as e:
            if e.errcode != "M_USER_IN_USE":
                raise
        step(f"register {user}")

    bot = login(base, a.bot, a.password)
    step("login bot")
    reader = login(base, a.reader, a.password)
    step("login reader")

    room_id = call(base, "POST", "/_matrix/client/v3/createRoom",
                   {"preset": "private_chat", "name": a.room_name},
                   token=bot["access_token"])["room_id"]
    step("createRoom")
    call(base, "POST", f"/_matrix/client/v3/rooms/{q(room_id)}/invite",
         {"user_id": reader["user_id"]}, token=bot["access_token"])
    step("invite")
    call(base, "POST", f"/_matrix/client/v3/rooms/{q(room_id)}/join", {},
         token=reader["access_token"])
    step("join")
    members = {}
    for m in a.member:
        member = login(base, m, a.password)
        call(base, "POST", f"/_matrix/client/v3/rooms/{q(room_id)}/invite",
             {"user_id": member["user_id"]}, token=bot["access_token"])
        call(base, "POST", f"/_matrix/client/v3/rooms/{q(room_id)}/join", {},
             token=member["access_token"])
        members[m] = member["access_token"]
    step("members")
    if a.timings:
        print(f"  total: {1000 * (time.monotonic() - t0):.0f} ms", file=sys.stderr)

    print(json.dumps({
        "room_id": room_id,
        "bot_token": bot["access_token"],
        "reader_token": reader["access_token"],
        "bot_user_id": bot["user_id"],
        "reader_user_id": reader["user_id"],
        "base_url": base,
        "members": members,
    }))


if __name__ == "__main__":
    try:
        main()
    except MatrixError as e:
        print(f"setup_room: {e}", file=sys.stderr)
        sys.exit(1)
