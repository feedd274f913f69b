"""Knowledge benchmark (issue #45), driven by scripts/knowledge-bench.sh:

1. retrieval quality: the docs (one copy) as a sitemap source, then 50
   plain-language questions, each with the pages that answer it: recall@5
   and MRR of `POST /v1/knowledge/search` (full text);
2. chat turns alone: a workspace user asks questions (the demo model
   searches the knowledge and answers), two at a time, time to the end of
   each turn's stream;
3. the same turns while a site of several hundred pages (the other copies,
   one sitemap) syncs: the sync's time, and the turns' times during it;
4. search latency over every chunk then kept.

With an embeddings model (the workspace's `knowledge.retrieval` is
`hybrid`), steps 1 and 4 only: the quality and latency of hybrid search.

Standard library only; loopback only.
"""

import base64
import hashlib
import hmac
import json
import statistics
import sys
import threading
import time
import urllib.request

SERVER, DOCS, KEY, WORKSPACE, SECRET, QUESTIONS = sys.argv[1:7]
questions = json.load(open(QUESTIONS))["questions"]


def call(method, path, body=None, bearer=KEY):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(SERVER + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + bearer)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=300) as response:
        raw = response.read()
        return json.loads(raw) if raw and response.headers.get_content_type() == "application/json" else raw


def token(sub):
    enc = lambda b: base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    now = int(time.time())
    head = enc(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = enc(json.dumps({"aud": "context-assistant", "ws": WORKSPACE, "sub": sub, "permissions": [],
                             "iat": now, "exp": now + 3600}).encode())
    sig = enc(hmac.new(SECRET.encode(), f"{head}.{claims}".encode(), hashlib.sha256).digest())
    return f"{head}.{claims}.{sig}"


def add(url):
    return call("POST", "/v1/knowledge/sources", {"kind": "sitemap", "url": url, "refresh_hours": 0})


def wait(source):
    while source["status"] not in ("ready", "failed"):
        time.sleep(0.5)
        source = call("GET", "/v1/knowledge/sources/" + source["id"])
    return source


def page_of(url):
    path = url.split("#")[0].split("?")[0]
    return path.split("/", 4)[4] if path.count("/") >= 4 else path


def percentile(values, p):
    values = sorted(values)
    return values[max(0, int(round(len(values) * p)) - 1)]


def turns(n, until=None):
    """Turns by two users at once: n each, or until `until()` says stop."""
    times, lock = [], threading.Lock()

    def user(sub):
        bearer = token(sub)
        done = 0
        while (until is None and done < n) or (until is not None and not until()):
            q = questions[done % len(questions)]["q"]
            started = time.monotonic()
            call("POST", "/v1/chat/turns", {"message": q}, bearer)
            with lock:
                times.append((time.monotonic() - started) * 1000)
            done += 1

    threads = [threading.Thread(target=user, args=(f"bench_{i}_{time.time_ns()}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


retrieval = call("GET", "/v1/workspace")["knowledge"]
mode = "full text" if retrieval["retrieval"] == "full_text" else f"hybrid ({retrieval['embeddings_model']})"

# 1. Quality.
started = time.monotonic()
source = wait(add(f"{DOCS}/c0/sitemap.xml"))
print(f"docs: {source['pages']} pages, {source['chunks']} chunks, {source['failed_pages']} not read "
      f"({source['status']}), synced in {time.monotonic() - started:.1f} s")
hits, reciprocal, misses = 0, 0.0, []
for item in questions:
    results = call("POST", "/v1/knowledge/search", {"query": item["q"], "limit": 5})["results"]
    pages = [page_of(r["url"]) for r in results]
    rank = next((i + 1 for i, p in enumerate(pages) if p in item["pages"]), None)
    if rank:
        hits += 1
        reciprocal += 1 / rank
    else:
        misses.append((item["q"], item["pages"], pages))
n = len(questions)
print(f"{mode}: recall@5 {hits / n:.1%} ({hits}/{n}), MRR {reciprocal / n:.3f}")
for q, wanted, got in misses:
    print(f"  missed: {q!r} wanted {wanted}, got {got}")


def load():
    # 2. Turns alone.
    alone = turns(15)
    print(f"turns alone: {len(alone)} turns, p50 {statistics.median(alone):.0f} ms, p95 {percentile(alone, 0.95):.0f} ms")

    # 3. Turns while a large site syncs.
    started = time.monotonic()
    big = add(f"{DOCS}/big.xml")
    state = {"source": big}

    def synced():
        state["source"] = call("GET", "/v1/knowledge/sources/" + big["id"])
        return state["source"]["status"] in ("ready", "failed")

    during = turns(0, until=synced)
    seconds = time.monotonic() - started
    big = state["source"]
    print(f"sync of {big['pages']} pages ({big['chunks']} chunks, {big['failed_pages']} not read): {seconds:.0f} s, "
          f"{big['status']}")
    print(f"turns during the sync: {len(during)} turns, p50 {statistics.median(during):.0f} ms, "
          f"p95 {percentile(during, 0.95):.0f} ms")


if retrieval["retrieval"] == "full_text":
    load()

# 4. Search latency over everything kept.
total = sum(s["chunks"] for s in call("GET", "/v1/knowledge/sources")["sources"])
call("POST", "/v1/knowledge/search", {"query": "warm the index", "limit": 5})
latencies = []
for _ in range(4):
    for item in questions:
        t = time.monotonic()
        call("POST", "/v1/knowledge/search", {"query": item["q"], "limit": 5})
        latencies.append((time.monotonic() - t) * 1000)
print(f"search over {total} chunks: p50 {statistics.median(latencies):.1f} ms, "
      f"p95 {percentile(latencies, 0.95):.1f} ms ({len(latencies)} searches, HTTP round trip included)")
