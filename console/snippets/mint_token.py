# Mints a Context Assistant embed token for your signed-in user, with PyJWT
# (pip install PyJWT). Keep CA_EMBED_SECRET on the server only.
import os
import sys
import time

import jwt

WORKSPACE = "{{WORKSPACE}}"


def assistant_token(user_id, permissions=()):
    now = int(time.time())
    claims = {
        "aud": "context-assistant",
        "ws": WORKSPACE,
        "sub": str(user_id),
        "permissions": list(permissions),
        "iat": now,
        "exp": now + 3600,
    }
    return jwt.encode(claims, os.environ["CA_EMBED_SECRET"], algorithm="HS256")


# Your token endpoint (data-token-url) answers it as text, for example with Flask:
#   @app.get("/assistant/token")
#   @login_required
#   def assistant_token_endpoint():
#       return assistant_token(current_user.id), 200, {"Content-Type": "text/plain", "Cache-Control": "no-store"}

if __name__ == "__main__":
    print(assistant_token(sys.argv[1] if len(sys.argv) > 1 else "user_42"))
