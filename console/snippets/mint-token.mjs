// Mints a Context Assistant embed token for your signed-in user, with jose
// (npm install jose). Keep CA_EMBED_SECRET on the server only.
import { SignJWT } from "jose";

const WORKSPACE = "{{WORKSPACE}}";
const secret = new TextEncoder().encode(process.env.CA_EMBED_SECRET);

export async function assistantToken(userId, permissions = []) {
  return new SignJWT({ ws: WORKSPACE, permissions })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(String(userId))
    .setAudience("context-assistant")
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(secret);
}

// Your token endpoint (data-token-url) answers it as text, for example with Express:
//   app.get("/assistant/token", requireLogin, async (req, res) => {
//     res.type("text/plain").set("Cache-Control", "no-store").send(await assistantToken(req.user.id));
//   });

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(await assistantToken(process.argv[2] ?? "user_42"));
}
