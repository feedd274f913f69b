/* Context Assistant loader: <script src="…/embed.js" data-workspace="ws_…" data-token="…" async></script>
   (with data-token-url="/your/token", an expired token is replaced by GETting that same-origin URL)
   or ContextAssistant.init({ workspace, getToken: async () => token }), called again whenever the
   token expires. Draws a launcher; creates the widget's iframe on the first open only. The token
   travels by postMessage to the assistant's exact origin, never in a URL. The language is the
   host's (data-lang, init({ lang })), else the browser's, else English; the server fills in WORDS
   from the catalogues (widget/i18n) and serves this file minified. data-app-permissions="camera;
   microphone; geolocation" (init({ appPermissions }); an iframe's allow) lends those browser
   features to the widget, for the MCP Apps the workspace lets have them. */
(function () {
  "use strict";
  var me = document.currentScript;
  var origin;
  try { origin = new URL(me.src).origin; } catch (e) { return; }
  var api = window.ContextAssistant = window.ContextAssistant || {};
  if (api.init) return;
  var instances = api.instances = [];
  // Per language: the default label, then "Open", "Close", "n unread", "New reply in" and the frame's title.
  var WORDS = /*WORDS*/{};
  function speak(asked) {
    var tags = [asked].concat(navigator.languages || [navigator.language]);
    for (var i = 0; i < tags.length; i++) {
      var l = String(tags[i] || "").toLowerCase().split(/[-_]/)[0];
      if (WORDS[l]) return l;
    }
    return "en";
  }

  function make(opts) {
    var index = instances.length, listeners = {}, frame = null, ready = false, isOpen = false, watchdog = 0;
    var lang = speak(opts.lang), w = WORDS[lang] || [], name = opts.label || w[0];
    // Right-to-left: the launcher and the panel sit on the left.
    var side = lang === "ar" ? "left:" : "right:";
    function say(i, n) { return String(w[i]).replace("{label}", function () { return name; }).replace("{n}", n); }
    var first = opts.token, fixed = opts.token;
    var getToken = opts.getToken || function () {
      var t = first;
      if (t || !opts.tokenUrl) { first = null; return t || fixed; }
      return fetch(opts.tokenUrl, { credentials: "same-origin" }).then(function (r) { return r.ok ? r.text() : null; });
    };
    function emit(type, detail) { (listeners[type] || []).forEach(function (f) { try { f(detail); } catch (e) {} }); }
    // Through the CSSOM, not a style attribute: a host page whose CSP has no
    // 'unsafe-inline' in style-src refuses style attributes, not the CSSOM.
    function css(el, text) { el.style.cssText = text; return el; }
    var button = css(document.createElement("button"),
      "position:fixed;" + side + "20px;bottom:" + (20 + 72 * index) + "px;z-index:2147483000;width:56px;height:56px;" +
      "border-radius:28px;border:2px solid transparent;background:" + (opts.accent || "#1f6f5c") + ";color:#fff;cursor:pointer;" +
      "display:grid;place-items:center;box-shadow:0 4px 16px rgba(0,0,0,.25)");
    button.type = "button";
    button.className = "ca-launcher";
    button.innerHTML = '<svg width="26" height="26" viewBox="0 0 24 24" aria-hidden="true" fill="currentColor">' +
      '<path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg>';
    var unread = 0, badge = css(document.createElement("span"), "position:absolute;top:-4px;" + side + "-4px;" +
      "min-width:20px;height:20px;padding:0 6px;box-sizing:border-box;border-radius:10px;background:#b3261e;" +
      "color:#fff;font:700 12px/20px sans-serif;border:1px solid transparent");
    var said = css(document.createElement("span"), "position:absolute;width:1px;height:1px;overflow:hidden;" +
      "clip:rect(0 0 0 0);white-space:nowrap");
    said.setAttribute("role", "status");
    button.appendChild(badge);
    function label() {
      button.setAttribute("aria-label", say(isOpen ? 2 : 1) + (unread ? " (" + say(3, unread) + ")" : ""));
      button.setAttribute("aria-expanded", String(isOpen));
      badge.textContent = unread > 9 ? "9+" : unread;
      badge.style.display = unread ? "block" : "none";
    }
    label();
    button.onclick = function () { isOpen ? close() : open(); };
    document.body.appendChild(button);
    document.body.appendChild(said);

    function post(message) { if (frame) frame.contentWindow.postMessage(message, origin); }
    // Where a browser refuses the widget's frame storage of its own (Chromium blocking
    // third-party cookies, incognito), the widget keeps its record here, in this page's
    // localStorage under a key of ours: the messages not yet sent, the conversation to
    // restore and its copy for reading offline, all under the token's subject (README,
    // "What the widget keeps"). It goes back with the token; logout() removes it.
    var KEY = "context-assistant:" + opts.workspace;
    function store(value) {
      try { return value === undefined ? localStorage.getItem(KEY) : value === null ? localStorage.removeItem(KEY) :
        localStorage.setItem(KEY, value); } catch (e) { return null; }
    }
    // Asked for once when the frame has loaded (it takes it before its WASM has started) and
    // handed over again when the widget says it is ready; asked for anew only when it expired.
    var sent;
    function sendToken(fresh) {
      if (fresh || !sent) sent = Promise.resolve(getToken());
      sent.then(function (token) {
        if (token) post({ type: "ca:token", token: String(token), kept: store() });
      }, function (e) { emit("error", { message: "getToken failed", cause: e }); });
    }
    function onMessage(e) {
      if (!frame || e.origin !== origin || e.source !== frame.contentWindow) return;
      var d = e.data || {};
      if (d.type === "ca:ready") { ready = true; clearTimeout(watchdog); sendToken(); if (isOpen) focus(); }
      else if (d.type === "ca:token-expired") sendToken(true);
      else if (d.type === "ca:close") close();
      else if (d.type === "ca:keep" && typeof d.kept === "string") store(d.kept);
      else if (d.type === "ca:message") {
        if (!isOpen && d.detail && d.detail.role === "assistant") {
          unread++; label(); said.textContent = say(4);
        }
        emit("message", d.detail);
      }
    }
    window.addEventListener("message", onMessage);

    function layout() {
      var small = window.innerWidth < 480, vv = window.visualViewport;
      // On phones the frame fills the visible viewport, which shrinks above the on-screen keyboard.
      var box = small ? "left:0;top:" + (vv ? vv.offsetTop : 0) + "px;width:100%;height:" +
          (vv ? vv.height + "px" : "100%") + ";" :
        side + "20px;bottom:" + (88 + 72 * index) + "px;width:400px;height:min(640px,calc(100vh - " +
          (108 + 72 * index) + "px));border-radius:16px;box-shadow:0 12px 40px rgba(0,0,0,.3);";
      css(frame, "position:fixed;z-index:2147483001;border:0;background:transparent;color-scheme:normal;" +
        box + (isOpen ? "" : "display:none;"));
    }
    function focus() { frame.focus(); post({ type: "ca:focus" }); }
    function open() {
      if (!frame) {
        frame = document.createElement("iframe");
        frame.title = opts.label || say(5);
        // The widget copies replies; an MCP App gets camera, microphone or
        // geolocation only if the page lends them here too (data-app-permissions).
        frame.allow = "clipboard-write;" + (opts.appPermissions || "");
        frame.className = "ca-frame";
        var q = { ws: opts.workspace, lang: lang, theme: opts.theme, accent: opts.accent, radius: opts.radius,
          font: opts.font };
        frame.src = origin + "/widget?" + Object.keys(q).filter(function (k) { return q[k] != null; })
          .map(function (k) { return k + "=" + encodeURIComponent(q[k]); }).join("&");
        frame.addEventListener("load", function () {
          sendToken();
          watchdog = setTimeout(function () {
            if (!ready) console.error("Context Assistant: the widget did not start. Is " + location.origin +
              " in the allowed_origins of workspace " + opts.workspace + "?");
          }, 4000);
        });
        document.body.appendChild(frame);
        window.addEventListener("resize", relayout);
        if (window.visualViewport) {
          visualViewport.addEventListener("resize", relayout);
          visualViewport.addEventListener("scroll", relayout);
        }
      }
      isOpen = true;
      unread = 0;
      said.textContent = "";
      layout();
      label();
      if (ready) focus();
      emit("open");
    }
    function relayout() { if (frame) layout(); }
    function close() {
      if (!isOpen) return;
      isOpen = false;
      layout();
      label();
      button.focus();
      emit("close");
    }
    function drop() {
      if (frame) frame.remove();
      frame = null;
      ready = false;
    }
    function destroy() {
      window.removeEventListener("message", onMessage);
      window.removeEventListener("resize", relayout);
      drop();
      button.remove();
      said.remove();
    }
    // The visitor signs out of the host (a shared device): the widget's session ends and everything
    // kept for this workspace goes, in this page and in the frame's own storage (emptied by a small
    // page of the assistant's, /widget/forget, in a hidden frame). The next open asks getToken anew;
    // the tag's data-token is not used again. Resolves once the frame's storage is emptied (or 5 s).
    function logout() {
      close();
      drop();
      store(null);
      first = fixed = sent = null;
      unread = 0;
      label();
      return new Promise(function (done) {
        var forget = css(document.createElement("iframe"), "display:none");
        function end(e) {
          if (!forget || e && (e.origin !== origin || e.source !== forget.contentWindow)) return;
          window.removeEventListener("message", end);
          forget.remove();
          forget = null;
          emit("logout");
          done();
        }
        setTimeout(end, 5000);
        window.addEventListener("message", end);
        forget.src = origin + "/widget/forget?ws=" + encodeURIComponent(opts.workspace);
        document.body.appendChild(forget);
      });
    }
    var instance = {
      open: open, close: close, destroy: destroy, logout: logout,
      on: function (type, f) { (listeners[type] = listeners[type] || []).push(f); }
    };
    instances.push(instance);
    return instance;
  }

  api.init = function (opts) {
    if (!opts || !opts.workspace) throw new Error("ContextAssistant.init needs { workspace, getToken }");
    function start() {
      var w = make(opts);
      // The newest instance answers ContextAssistant.open() and friends.
      api.open = w.open; api.close = w.close; api.destroy = w.destroy; api.on = w.on;
      // A sign-out ends every widget's session on the page.
      api.logout = function () { return Promise.all(instances.map(function (i) { return i.logout(); })); };
      return w;
    }
    if (document.body) return start();
    document.addEventListener("DOMContentLoaded", start);
    return null;
  };
  var ws = me.getAttribute("data-workspace");
  if (ws) api.init({ workspace: ws, token: me.getAttribute("data-token"), tokenUrl: me.getAttribute("data-token-url"),
    theme: me.getAttribute("data-theme") || null, lang: me.getAttribute("data-lang") || null,
    accent: me.getAttribute("data-accent") || null, appPermissions: me.getAttribute("data-app-permissions") });
})();
