/* Context Assistant loader: <script src="…/embed.js" data-workspace="ws_…" data-token="…" async></script>
   or window.ContextAssistant.init({ workspace, getToken: async () => token }).
   Draws a launcher; creates the widget's iframe on first open only. The
   token travels by postMessage to the assistant's exact origin, never in a URL. */
(function () {
  "use strict";
  var me = document.currentScript;
  var src = me && me.src ? me.src : "";
  var origin;
  try { origin = new URL(src).origin; } catch (e) { return; }
  var api = window.ContextAssistant = window.ContextAssistant || {};
  if (api.__loaded) return;
  api.__loaded = true;

  function make(opts) {
    var ws = opts.workspace, listeners = {}, frame = null, button = null, isOpen = false;
    var getToken = opts.getToken || function () { return opts.token; };
    function emit(type, detail) { (listeners[type] || []).forEach(function (f) { try { f(detail); } catch (e) {} }); }
    function style(el, css) { el.setAttribute("style", css); return el; }
    button = style(document.createElement("button"),
      "position:fixed;right:20px;bottom:20px;z-index:2147483000;width:56px;height:56px;border-radius:28px;" +
      "border:0;background:" + (opts.accent || "#1f6f5c") + ";color:#fff;cursor:pointer;display:grid;place-items:center;" +
      "box-shadow:0 4px 16px rgba(0,0,0,.25)");
    button.type = "button";
    button.innerHTML = '<svg width="26" height="26" viewBox="0 0 24 24" aria-hidden="true" fill="currentColor">' +
      '<path d="M4 4h16a2 2 0 0 1 2 2v10a2 2 0 0 1-2 2H9l-5 4v-4a2 2 0 0 1-2-2V6a2 2 0 0 1 2-2z"/></svg>';
    button.setAttribute("aria-label", "Open chat");
    button.setAttribute("aria-expanded", "false");
    button.className = "ca-launcher";
    button.onclick = function () { isOpen ? close() : open(); };
    document.body.appendChild(button);

    function sendToken() {
      Promise.resolve(getToken()).then(function (token) {
        if (frame && token) frame.contentWindow.postMessage({ type: "ca:token", token: String(token) }, origin);
      }, function () { emit("error", { message: "getToken failed" }); });
    }
    function onMessage(e) {
      if (!frame || e.origin !== origin || e.source !== frame.contentWindow) return;
      var d = e.data || {};
      if (d.type === "ca:ready" || d.type === "ca:token-expired") sendToken();
      else if (d.type === "ca:close") close();
      else if (d.type === "ca:message") emit("message", d.detail);
    }
    window.addEventListener("message", onMessage);

    function layout() {
      var small = window.innerWidth < 480;
      style(frame, "position:fixed;z-index:2147483001;border:0;background:transparent;color-scheme:normal;" +
        (small ? "inset:0;width:100%;height:100%;" :
          "right:20px;bottom:88px;width:400px;height:min(640px,calc(100vh - 108px));border-radius:16px;" +
          "box-shadow:0 12px 40px rgba(0,0,0,.3);") + (isOpen ? "" : "display:none;"));
    }
    function open() {
      if (!frame) {
        frame = document.createElement("iframe");
        frame.title = "Chat assistant";
        frame.className = "ca-frame";
        frame.src = origin + "/widget?ws=" + encodeURIComponent(ws);
        document.body.appendChild(frame);
        window.addEventListener("resize", function () { if (frame) layout(); });
      }
      isOpen = true;
      layout();
      button.setAttribute("aria-expanded", "true");
      button.setAttribute("aria-label", "Close chat");
      emit("open");
    }
    function close() {
      if (!isOpen) return;
      isOpen = false;
      layout();
      button.setAttribute("aria-expanded", "false");
      button.setAttribute("aria-label", "Open chat");
      button.focus();
      emit("close");
    }
    function destroy() {
      window.removeEventListener("message", onMessage);
      if (frame) frame.remove();
      button.remove();
      frame = null;
    }
    return {
      open: open, close: close, destroy: destroy,
      on: function (type, f) { (listeners[type] = listeners[type] || []).push(f); }
    };
  }

  api.init = function (opts) {
    if (!opts || !opts.workspace) throw new Error("ContextAssistant.init needs { workspace, getToken }");
    var start = function () { var w = make(opts); api.instances.push(w); api.open = w.open; api.close = w.close; api.destroy = w.destroy; api.on = w.on; return w; };
    return document.body ? start() : (document.addEventListener("DOMContentLoaded", start), null);
  };
  api.instances = api.instances || [];
  var ws = me.getAttribute("data-workspace");
  if (ws) api.init({ workspace: ws, token: me.getAttribute("data-token") });
})();
