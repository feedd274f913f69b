// Mints a Context Assistant embed token for your signed-in user, with Go's
// standard library only (HS256 is an HMAC-SHA256 over two base64url parts).
// Keep CA_EMBED_SECRET on the server only.
package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

const workspace = "{{WORKSPACE}}"

func AssistantToken(userID string, permissions []string) (string, error) {
	if permissions == nil {
		permissions = []string{}
	}
	now := time.Now().Unix()
	header, err := json.Marshal(map[string]string{"alg": "HS256", "typ": "JWT"})
	if err != nil {
		return "", err
	}
	claims, err := json.Marshal(map[string]any{
		"aud": "context-assistant", "ws": workspace, "sub": userID,
		"permissions": permissions, "iat": now, "exp": now + 3600,
	})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	unsigned := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	mac := hmac.New(sha256.New, []byte(os.Getenv("CA_EMBED_SECRET")))
	mac.Write([]byte(unsigned))
	return unsigned + "." + enc.EncodeToString(mac.Sum(nil)), nil
}

// Your token endpoint (data-token-url) answers it as text, for example:
//   http.HandleFunc("/assistant/token", func(w http.ResponseWriter, r *http.Request) {
//       token, _ := AssistantToken(currentUser(r).ID, nil)
//       w.Header().Set("Content-Type", "text/plain")
//       w.Header().Set("Cache-Control", "no-store")
//       fmt.Fprint(w, token)
//   })

func main() {
	user := "user_42"
	if len(os.Args) > 1 {
		user = os.Args[1]
	}
	token, err := AssistantToken(user, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(token)
}
