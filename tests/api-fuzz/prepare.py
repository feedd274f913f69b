"""Sets up what the property-based run acts on, the way a host would.

Creates a workspace (admin token), connects it to this server's demo
bistro host (its bearer derived from CA_SECRET_KEY, as the server derives
it), gives it this server's demo model as its own model, mints an embed token for one user (PyJWT), and runs turns so that a
conversation, a component and pending actions exist. Prints shell
assignments of the credentials and ids.
"""

import hashlib
import hmac
import json
import os
import shlex
import time
import urllib.request

import jwt

BASE = os.environ["BASE"]


def call(method, path, token, body=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(BASE + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read().decode()


def events(stream):
    """The (event, data) pairs of a server-sent event stream."""
    out = []
    for block in stream.split("\n\n"):
        name, data = None, None
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data = json.loads(line[5:].strip())
        if name and data is not None:
            out.append((name, data))
    return out


def first(pairs, name):
    return next(data for event, data in pairs if event == name)


def turn(token, message, conversation_id=None):
    return events(call("POST", "/v1/chat/turns", token, {"message": message, "conversation_id": conversation_id}))


admin = os.environ["ADMIN_TOKEN"]
workspace = json.loads(
    call("POST", "/v1/workspaces", admin, {"name": "Fuzz", "allowed_origins": ["https://shop.example"]})
)
key = bytes.fromhex(os.environ["CA_SECRET_KEY"])
bistro_secret = hmac.new(key, b"acme-bistro host secret", hashlib.sha256).hexdigest()
call(
    "POST",
    "/v1/integrations/generic-rest/connect",
    workspace["api_key"],
    {"base_url": BASE + "/bistro/api", "secret": bistro_secret},
)
# The workspace's own model: this server's demo model, over loopback.
call(
    "PUT",
    "/v1/workspace/model",
    workspace["api_key"],
    {"base_url": BASE + "/demo-model/v1", "api_key": "demo", "model": "demo"},
)
# PATCH /v1/workspace gets a workspace of its own (schemathesis.toml).
settings = json.loads(call("POST", "/v1/workspaces", admin, {"name": "Fuzz settings"}))
# So do the rotations: a rotated api key must not lock the other operations out.
rotation = json.loads(call("POST", "/v1/workspaces", admin, {"name": "Fuzz rotation"}))
now = int(time.time())
claims = {"aud": "context-assistant", "ws": workspace["id"], "sub": "fuzz-user", "permissions": [],
          "iat": now, "exp": now + 3600}
token = jwt.encode(claims, workspace["embed_secret"], algorithm="HS256")

menu = turn(token, "show me the menu")
conversation_id = first(menu, "turn")["conversation_id"]
component_id = first(menu, "component")["component_id"]
create = first(turn(token, "add a margherita", conversation_id), "pending_action")["action_id"]
delete = first(turn(token, "clear my cart"), "pending_action")["action_id"]

for name, value in {
    "CA_FUZZ_ADMIN_TOKEN": admin,
    "CA_FUZZ_API_KEY": workspace["api_key"],
    "CA_FUZZ_SETTINGS_API_KEY": settings["api_key"],
    "CA_FUZZ_ROTATION_API_KEY": rotation["api_key"],
    "CA_FUZZ_EMBED_TOKEN": token,
    "CA_FUZZ_CONVERSATION": conversation_id,
    "CA_FUZZ_COMPONENT": component_id,
    "CA_FUZZ_ACTION": create,
    "CA_FUZZ_DELETE_ACTION": delete,
    "CA_FUZZ_TURN": first(menu, "turn")["turn_id"],
    "CA_FUZZ_MESSAGE": first(menu, "message")["message_id"],
}.items():
    print(f"export {name}={shlex.quote(value)}")
