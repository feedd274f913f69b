// The sandbox page (server/src/sandbox/mod.rs): on an origin of its own,
// it takes an MCP App's HTML from the assistant's bridge page (its parent,
// checked by window and origin) and runs it in a frame without an origin
// (sandboxed without allow-same-origin; it inherits this page's policy),
// then relays the app's JSON-RPC messages both ways, as they are.
(function () {
  "use strict";
  var host = "__HOST__";
  var allow = "__ALLOW__"; // the browser features granted (GET /v1/apps decided), or ""
  var inner = null;
  function toHost(message) {
    parent.postMessage(message, host);
  }
  window.addEventListener("message", function (event) {
    var message = event.data;
    if (event.source === parent && event.origin === host) {
      if (!message || typeof message !== "object") return;
      var method = typeof message.method === "string" ? message.method : "";
      if (method === "ui/notifications/sandbox-resource-ready") {
        var params = message.params || {};
        if (inner || typeof params.html !== "string") return;
        inner = document.createElement("iframe");
        // Scripts and forms (posting nowhere: form-action 'none'); no
        // origin, no popups, no top navigation; only the browser
        // features the workspace lets its apps have and this app asked for.
        inner.setAttribute("sandbox", "allow-scripts allow-forms");
        if (allow) inner.setAttribute("allow", allow);
        inner.setAttribute("title", typeof params.title === "string" ? params.title : "App");
        inner.srcdoc = params.html;
        document.body.appendChild(inner);
        return;
      }
      if (method.indexOf("ui/notifications/sandbox-") === 0) return;
      if (inner && inner.contentWindow) inner.contentWindow.postMessage(message, "*");
    } else if (inner && event.source === inner.contentWindow) {
      toHost(message);
    }
  });
  toHost({ jsonrpc: "2.0", method: "ui/notifications/sandbox-proxy-ready", params: {} });
})();
