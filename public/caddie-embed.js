// The Caddie embed pages' script (caddie-tool-contract-ct1.md §9): the
// entry that redeems the launch token from the URL fragment, the sign-in
// card that opens the identity provider in a popup, and the popup's last
// page. Framed pages speak the `caddie-embed` bus with the hub: sent only
// to the hub's origin, and heard only from it and from our parent window.
"use strict";
(() => {
  const body = document.body;
  const hub = document.querySelector('meta[name="ca-hub"]')?.content;
  const framed = window.parent !== window;

  function post(event, fields = {}) {
    if (!hub || !framed) return;
    window.parent.postMessage({ type: "caddie-embed", v: 1, event, ...fields }, hub);
  }
  const height = () => Math.ceil(document.documentElement.getBoundingClientRect().height);

  // The popup's end: tell the frame that opened it, then close.
  if (body.hasAttribute("data-signed-in")) {
    const message = { type: "ca:signed-in" };
    try { window.opener?.postMessage(message, location.origin); } catch { /* opener gone */ }
    // Also for an opener the identity provider's pages cut off.
    try { new BroadcastChannel("ca-sign-in").postMessage(message); } catch { /* unsupported */ }
    setTimeout(() => window.close(), 50);
    return;
  }

  if (hub && framed) {
    window.addEventListener("message", (e) => {
      if (e.origin !== hub || e.source !== window.parent) return;
      const m = e.data;
      if (!m || m.type !== "caddie-embed" || m.v !== 1) return;
      if (m.event === "init" && (m.theme === "light" || m.theme === "dark")) {
        document.documentElement.style.colorScheme = m.theme;
      }
    });
    post("ready", { height: height() });
    post("title", { text: document.title });
    let last = height();
    new ResizeObserver(() => {
      const h = height();
      if (h !== last) post("resize", { height: (last = h) });
    }).observe(document.documentElement);
  }
  const event = body.dataset.event;
  if (event) post(event);

  for (const button of document.querySelectorAll("[data-relaunch]")) {
    button.addEventListener("click", () => post("relaunch"));
  }

  // The sign-in card: the identity provider in a popup, never in the frame.
  const resume = body.dataset.resume;
  if (resume && resume.startsWith("/caddie/")) {
    let popup = null;
    const done = () => location.replace(resume);
    window.addEventListener("message", (e) => {
      if (e.origin === location.origin && popup && e.source === popup && e.data?.type === "ca:signed-in") done();
    });
    try {
      new BroadcastChannel("ca-sign-in").onmessage = (e) => { if (e.data?.type === "ca:signed-in") done(); };
    } catch { /* unsupported */ }
    const open = (url) => {
      popup = window.open(url, "ca-sign-in", "popup,width=520,height=680");
      const blocked = document.querySelector("[data-popup-blocked]");
      if (blocked) blocked.hidden = !!popup;
      return popup;
    };
    for (const button of document.querySelectorAll("[data-popup]")) {
      button.addEventListener("click", () => open(button.dataset.popup));
    }
    // Switch account: the form posts into the popup.
    for (const form of document.querySelectorAll("form[data-popup-form]")) {
      form.addEventListener("submit", (e) => { if (!open("about:blank")) e.preventDefault(); });
    }
  }

  // The entry: the token from the fragment, which is cleared at once.
  if (location.pathname === "/embed") {
    const status = document.querySelector("[data-status]");
    const again = document.querySelector("[data-relaunch]");
    const say = (text, retry) => { status.textContent = text; again.hidden = !retry; };
    const redeem = async () => {
      const params = new URLSearchParams(location.hash.slice(1));
      const lt = params.get("lt");
      history.replaceState(null, "", "/embed");
      if (!lt) return say("Open this tool from your project in Caddie.", false);
      say("One moment.", false);
      let answer;
      try {
        answer = await fetch("/api/embed/redeem", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ lt, tour: params.get("tour") === "1" }),
          credentials: "same-origin",
        });
      } catch {
        return say("The assistant cannot be reached. Try again in a moment.", true);
      }
      const reply = await answer.json().catch(() => ({}));
      if (answer.ok && typeof reply.open === "string" && reply.open.startsWith("/caddie/open?")) {
        return location.replace(reply.open);
      }
      if (reply.code === "link_expired") {
        say("Getting a fresh link from Caddie…", true);
        return post("relaunch");
      }
      if (reply.code === "contract_mismatch") return say("This tool and Caddie are being updated. Please try again later.", false);
      say("This link is not valid. Open this tool from your project in Caddie.", false);
    };
    // The hub swaps the fragment for a fresh token (`relaunch`).
    window.addEventListener("hashchange", redeem);
    redeem();
  }
})();
