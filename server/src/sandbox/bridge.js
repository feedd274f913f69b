// The bridge page (server/src/sandbox/mod.rs): the host side of one MCP
// App (the io.modelcontextprotocol/ui extension, protocol 2026-01-26).
// It runs on the assistant's origin, framed by the widget where the app
// appears, and holds only the app token after `#` in its address.
//
// Written by hand rather than with the ext-apps SDK's AppBridge: that
// carries the MCP TypeScript SDK and zod into the page and decides in the
// browser, while here every request of the app goes to the server to be
// decided (POST /v1/apps/{id}/requests); what is left is relaying,
// sizing and asking the visitor, which this file does.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("config").textContent);
  var token = location.hash.slice(1);
  history.replaceState(null, "", location.pathname);
  var root = document.getElementById("app");
  var chrome = document.getElementById("chrome");
  var self = window.frameElement; // our frame in the widget (same origin)
  var widget = parent.document.documentElement;
  var app = null;
  var frame = null;
  var sandboxOrigin = config.sandboxOrigin;
  var initialized = false;
  var mode = "inline";
  var height = 0;
  var asking = null; // the question on screen: one at a time
  var nextId = 1;
  var waiting = {}; // our requests to the app, by id

  function lang() {
    var tag = (widget.getAttribute("lang") || "en").split("-")[0].toLowerCase();
    return config.words[tag] ? tag : "en";
  }
  function t(key) {
    return config.words[lang()][key] || config.words.en[key];
  }
  function theme() {
    var set = widget.getAttribute("data-theme");
    if (set === "dark" || set === "light") return set;
    return window.matchMedia && matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }
  // The widget's look, as its custom properties say now.
  function look() {
    var style = getComputedStyle(widget);
    ["--ca-accent", "--ca-accent-text", "--ca-bg", "--ca-surface", "--ca-text", "--ca-muted", "--ca-border",
     "--ca-radius", "--ca-font"].forEach(function (name) {
      var value = style.getPropertyValue(name);
      if (value) document.documentElement.style.setProperty(name, value.trim());
    });
    document.documentElement.style.colorScheme = theme();
    document.documentElement.lang = widget.getAttribute("lang") || "en";
    document.documentElement.dir = widget.getAttribute("dir") || "ltr";
  }
  function context() {
    var zone = "";
    try {
      zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    } catch (e) {}
    var found = {
      theme: theme(),
      displayMode: mode,
      availableDisplayModes: ["inline", "fullscreen"],
      containerDimensions: { maxHeight: config.maxHeight, width: root.clientWidth || 320 },
      locale: widget.getAttribute("lang") || "en",
      platform: "web",
      toolInfo: { id: app.call_id, tool: app.tool }
    };
    if (zone) found.timeZone = zone;
    return found;
  }

  // The visible part of our frame: the app's height, and our questions.
  function fit() {
    if (!self) return;
    if (mode === "fullscreen") {
      self.style.height = "";
      return;
    }
    self.style.height = Math.ceil((frame ? height : 0) + chrome.offsetHeight) + "px";
  }
  function say(text) {
    chrome.textContent = "";
    var p = document.createElement("p");
    p.className = "note";
    p.setAttribute("role", "status");
    p.textContent = text;
    chrome.appendChild(p);
    fit();
  }

  function send(message) {
    if (frame && frame.contentWindow) frame.contentWindow.postMessage(message, sandboxOrigin);
  }
  // `id` null: a change shown again after a reload, whose request died
  // with the app's last page; the visitor is told the outcome instead.
  function reply(id, result) {
    if (id != null) send({ jsonrpc: "2.0", id: id, result: result });
  }
  function fail(id, code, message) {
    if (id != null) send({ jsonrpc: "2.0", id: id, error: { code: code, message: message } });
  }
  function notify(method, params) {
    send({ jsonrpc: "2.0", method: method, params: params });
  }

  function api(method, path, body) {
    var init = { method: method, headers: { Authorization: "Bearer " + token } };
    if (body) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (response) {
      if (response.status === 401) say(t("app_expired"));
      return response.json().then(
        function (json) {
          return { status: response.status, body: json };
        },
        function () {
          return { status: response.status, body: {} };
        }
      );
    });
  }

  // Asks the visitor, outside the app's frame; resolves true for yes.
  function ask(question, detail, yes) {
    return new Promise(function (resolve) {
      var box = document.createElement("div");
      box.className = "ask";
      box.setAttribute("role", "alertdialog");
      box.setAttribute("aria-label", question);
      var q = document.createElement("p");
      q.textContent = question;
      var d = document.createElement("p");
      d.className = "detail";
      d.textContent = detail;
      var ok = document.createElement("button");
      ok.type = "button";
      ok.className = "yes";
      ok.textContent = yes;
      var no = document.createElement("button");
      no.type = "button";
      no.className = "no";
      no.textContent = t("app_cancel");
      function done(answer) {
        box.remove();
        asking = null;
        fit();
        resolve(answer);
      }
      ok.onclick = function () {
        done(true);
      };
      no.onclick = function () {
        done(false);
      };
      box.append(q, d, ok, no);
      chrome.textContent = "";
      chrome.appendChild(box);
      asking = box;
      fit();
      // Yes cannot be pressed at once: an app cannot time its request so
      // that our question appears under a click meant for the app.
      // Focus starts on Cancel, the answer that changes nothing.
      ok.disabled = true;
      no.focus();
      setTimeout(function () {
        ok.disabled = false;
      }, 500);
    });
  }

  // A change the app asked for (a tool that is not a read), frozen on the
  // server as the app's pending action: shown here, outside the app's
  // frame, and run only on the visitor's Apply — a delete is confirmed
  // first, then applied. The app's request is answered with the tool's
  // result, or told the visitor declined.
  function change(id, action) {
    var path = "/v1/apps/" + config.id + "/actions/" + encodeURIComponent(action.action_id) + "/";
    function cancel(why) {
      api("POST", path + "cancel");
      fail(id, -32000, why || "the visitor declined");
    }
    function answered(answer) {
      if (chrome.firstChild && chrome.firstChild.className === "note") chrome.textContent = "";
      fit();
      if (id == null) {
        var body = answer.body || {};
        var failed = answer.status !== 200 || body.error || (body.result && body.result.isError);
        return say(failed ? (body.error && (body.error.message || body.error)) || t("app_unavailable") : t("done"));
      }
      decided(id, "tools/call", {}, answer);
    }
    function apply() {
      say(t("applying"));
      api("POST", path + "apply").then(answered, function () {
        fail(id, -32000, "the assistant cannot be reached");
      });
    }
    if (asking) return cancel("the visitor is answering another question");
    var destructive = action.confirmations_required === 2;
    var question = destructive ? t("app_confirm_delete") : t("app_confirm_change");
    ask(question, action.preview, destructive ? t("delete") : t("apply")).then(function (yes) {
      if (!yes) return cancel();
      if (!destructive) return apply();
      api("POST", path + "confirm").then(function (confirmed) {
        if (confirmed.status !== 200) return answered(confirmed);
        ask(t("action_delete_warning"), action.preview, t("delete_permanently")).then(function (sure) {
          if (sure) apply();
          else cancel();
        });
      });
    });
  }

  // The widget's composer sends `text` as the visitor's message; what the
  // visitor had typed stays. False when the chat cannot send now.
  function sendToChat(text) {
    var field = parent.document.getElementById("ca-input");
    if (!field || !field.form) return false;
    var typed = field.value;
    field.value = text;
    field.form.requestSubmit();
    var sent = field.value === "";
    field.value = typed;
    return sent;
  }

  function decided(id, method, params, answer) {
    if (answer.status === 429) return fail(id, -32000, "too many requests from this app; try again later");
    if (answer.status !== 200) return fail(id, -32000, (answer.body && answer.body.error) || "refused");
    var body = answer.body;
    if (body.error) return fail(id, body.error.code, body.error.message);
    if (body.action) return change(id, body.action);
    if (body.confirm) {
      if (asking) return fail(id, -32000, "the visitor is answering another question");
      var link = body.confirm.kind === "link";
      var question = link ? t("app_confirm_link") : t("app_confirm_message");
      var detail = link ? body.confirm.url : body.confirm.text;
      return ask(question, detail, link ? t("app_open") : t("app_send")).then(function (yes) {
        if (!yes) return fail(id, -32000, "the visitor declined");
        if (link) {
          window.open(body.confirm.url, "_blank", "noopener,noreferrer");
          return reply(id, {});
        }
        return api("POST", "/v1/apps/" + config.id + "/requests", {
          method: method,
          params: params,
          confirmed: true
        }).then(function (again) {
          decided(id, method, params, again);
        });
      });
    }
    if (typeof body.send === "string" && !sendToChat(body.send)) {
      return fail(id, -32000, "the chat cannot take a message right now");
    }
    reply(id, body.result || {});
  }

  // The tool's result once it answered, or that it was cancelled (the
  // turn ended first); while it runs the server is asked again, about
  // once a second, for as long as a tool may take.
  var asked = 0;
  function outcome() {
    if (app.status === "done") return notify("ui/notifications/tool-result", app.result);
    if (app.status === "cancelled") {
      return notify("ui/notifications/tool-cancelled", { reason: app.cancel_reason || "cancelled" });
    }
    if (++asked > 900) return;
    setTimeout(function () {
      api("GET", "/v1/apps/" + config.id).then(
        function (answer) {
          // Gone or no longer ours: stop; any other failure: ask again.
          if (answer.status === 401 || answer.status === 404) return;
          if (answer.status !== 200) return outcome();
          app.status = answer.body.status;
          app.result = answer.body.result;
          app.cancel_reason = answer.body.cancel_reason;
          outcome();
        },
        outcome
      );
    }, asked < 4 ? 300 : 1000);
  }

  function setMode(wanted) {
    if (wanted !== "inline" && wanted !== "fullscreen") return mode;
    mode = wanted;
    if (self) self.classList.toggle("ca-app-full", mode === "fullscreen");
    document.documentElement.classList.toggle("full", mode === "fullscreen");
    if (mode === "fullscreen") {
      var exit = document.createElement("button");
      exit.type = "button";
      exit.className = "exit";
      exit.textContent = t("app_exit_full");
      exit.onclick = function () {
        setMode("inline");
        if (initialized) notify("ui/notifications/host-context-changed", { displayMode: "inline" });
      };
      chrome.textContent = "";
      chrome.appendChild(exit);
    } else if (!asking) {
      chrome.textContent = "";
    }
    fit();
    return mode;
  }

  function request(message) {
    var id = message.id;
    var method = message.method;
    var params = message.params || {};
    if (method === "ui/initialize") {
      var asked = params.protocolVersion;
      return reply(id, {
        protocolVersion: asked === app.protocol_version ? asked : app.protocol_version,
        hostInfo: { name: "Context Assistant", version: "1" },
        hostCapabilities: {
          openLinks: {},
          serverTools: {},
          serverResources: {},
          logging: {},
          updateModelContext: { text: {}, structuredContent: {} },
          message: { text: {} }
        },
        hostContext: context()
      });
    }
    if (method === "ping") return reply(id, {});
    if (method === "ui/request-display-mode") {
      var now = setMode(params.mode);
      return reply(id, { mode: now });
    }
    api("POST", "/v1/apps/" + config.id + "/requests", { method: method, params: params }).then(
      function (answer) {
        decided(id, method, params, answer);
      },
      function () {
        fail(id, -32000, "the assistant cannot be reached");
      }
    );
  }

  function notification(message) {
    var params = message.params || {};
    if (message.method === "ui/notifications/initialized") {
      if (initialized) return;
      initialized = true;
      notify("ui/notifications/tool-input", { arguments: app.input });
      outcome();
    } else if (message.method === "ui/notifications/size-changed") {
      var wanted = Number(params.height);
      if (!isFinite(wanted) || wanted < 0) return;
      wanted = Math.min(Math.ceil(wanted), config.maxHeight);
      // A change of 4 px or less is not worth a redraw of the panel.
      if (Math.abs(wanted - height) <= 4) return;
      height = wanted;
      frame.style.height = height + "px";
      fit();
    } else if (message.method === "notifications/message") {
      api("POST", "/v1/apps/" + config.id + "/requests", { method: message.method, params: params });
    }
  }

  window.addEventListener("message", function (event) {
    if (!frame || event.source !== frame.contentWindow || event.origin !== sandboxOrigin) return;
    var message = event.data;
    if (!message || typeof message !== "object" || message.jsonrpc !== "2.0") return;
    if (message.method === "ui/notifications/sandbox-proxy-ready") {
      return send({
        jsonrpc: "2.0",
        method: "ui/notifications/sandbox-resource-ready",
        params: { html: app.html, title: app.title }
      });
    }
    if (typeof message.method === "string" && message.id !== undefined && message.id !== null) return request(message);
    if (typeof message.method === "string") return notification(message);
    if (message.id !== undefined && waiting[message.id]) {
      waiting[message.id](message);
      delete waiting[message.id];
    }
  });

  // The widget's language or theme changed: the app is told.
  new MutationObserver(function () {
    look();
    if (initialized) notify("ui/notifications/host-context-changed", { theme: theme(), locale: widget.getAttribute("lang") || "en" });
  }).observe(widget, { attributes: true, attributeFilter: ["lang", "data-theme", "dir", "style"] });

  // Before our frame goes, the app may save its state (ui/resource-teardown),
  // once. Resolves when the app answered.
  var tornDown = null;
  function teardown() {
    if (!tornDown) {
      tornDown = new Promise(function (done) {
        if (!initialized) return done();
        var id = "teardown-" + nextId++;
        waiting[id] = function () {
          done();
        };
        send({ jsonrpc: "2.0", id: id, method: "ui/resource-teardown", params: {} });
      });
    }
    return tornDown;
  }
  // Just before the widget empties its transcript it calls caTeardown on
  // its window (widget/src/client/apps.rs). Every app on screen is moved
  // aside into a hidden holder, still running (Element.moveBefore keeps a
  // frame's document; a browser without it cannot, and the app is asked
  // as its frame goes, best effort), asked to tear down, and removed once
  // it answered, three seconds at most (out of sight: the new transcript
  // does not wait). Each bridge on screen registers;
  // caTeardown is always a live one's.
  var widgetWindow = parent;
  var bridges = widgetWindow.__caBridges || (widgetWindow.__caBridges = new widgetWindow.Array());
  function leave(holder) {
    if (!self || !self.isConnected) return;
    if (typeof holder.moveBefore === "function") holder.moveBefore(self, null);
    function gone() {
      self.remove();
      if (!holder.firstChild) holder.remove();
    }
    setTimeout(gone, 3000);
    teardown().then(gone);
  }
  var me = {
    leave: leave,
    askAll: function () {
      var doc = widgetWindow.document;
      var holder = doc.createElement("div");
      holder.hidden = true;
      doc.body.appendChild(holder);
      bridges.slice().forEach(function (bridge) {
        try {
          bridge.leave(holder);
        } catch (e) {}
      });
      if (!holder.firstChild) holder.remove();
    }
  };
  bridges.push(me);
  widgetWindow.caTeardown = me.askAll;
  // Our page goes (the frame was removed, or the whole page unloads): the
  // app is asked if it was not yet (best effort: it may not hear it), and
  // we leave the widget's list.
  window.addEventListener("pagehide", function () {
    teardown();
    var at = bridges.indexOf(me);
    if (at >= 0) bridges.splice(at, 1);
    if (widgetWindow.caTeardown === me.askAll) {
      if (bridges.length) widgetWindow.caTeardown = bridges[bridges.length - 1].askAll;
      else delete widgetWindow.caTeardown;
    }
  });

  look();
  say(t("app_loading"));
  api("GET", "/v1/apps/" + config.id).then(
    function (answer) {
      if (answer.status === 401) return;
      if (answer.status !== 200) return say(t("app_unavailable"));
      app = answer.body;
      sandboxOrigin = new URL(app.sandbox_url).origin;
      chrome.textContent = "";
      if (app.prefers_border === false) document.documentElement.classList.add("borderless");
      frame = document.createElement("iframe");
      frame.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
      // Only the browser features the server granted this app (none by default).
      frame.setAttribute("allow", app.allow || "");
      frame.setAttribute("referrerpolicy", "no-referrer");
      frame.title = app.title;
      frame.src = app.sandbox_url;
      height = 150;
      frame.style.height = height + "px";
      root.appendChild(frame);
      fit();
      // A change the app asked for before a reload still waits: shown again.
      if (app.pending_action) change(null, app.pending_action);
    },
    function () {
      say(t("app_unavailable"));
    }
  );
})();
