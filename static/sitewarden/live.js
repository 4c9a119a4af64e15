// Live progress of a running audit: re-fetch the server-rendered #live block every 2 s and swap it in,
// until the block says the audit has finished. No page reload; the HTML comes escaped from the server.
(function () {
  "use strict";
  var POLL_MS = 2000, RETRY_MS = 5000;
  var ANNOUNCE_EVERY_MS = 30000;  // progress is read out at most this often; phase and status changes at once
  var live = document.getElementById("live");
  var announcer = document.getElementById("live-announce");
  if (!live || live.dataset.finished === "true" || !window.fetch) return;
  var url = live.dataset.pollUrl, lastKey = live.dataset.status + "/" + live.dataset.phase;
  var lastSaid = 0;

  function announce(text) {
    if (!announcer || announcer.textContent === text) return;
    announcer.textContent = text;
    lastSaid = Date.now();
  }

  function finished() {
    document.querySelectorAll("[data-running-only]").forEach(function (el) { el.hidden = true; });
    document.querySelectorAll("[data-finished-only]").forEach(function (el) { el.hidden = false; });
  }

  function swap(html) {
    var tpl = document.createElement("template");
    tpl.innerHTML = html.trim();
    var next = tpl.content.querySelector("#live");
    if (!next) throw new Error("no #live block");
    live.replaceWith(next);
    live = next;
    var key = live.dataset.status + "/" + live.dataset.phase;
    if (key !== lastKey || Date.now() - lastSaid >= ANNOUNCE_EVERY_MS) announce(live.dataset.announce);
    lastKey = key;
    return live.dataset.finished === "true";
  }

  function poll() {
    fetch(url, { credentials: "same-origin", cache: "no-store", headers: { "X-Requested-With": "fetch" } })
      .then(function (r) { if (!r.ok || r.redirected) throw new Error("HTTP " + r.status); return r.text(); })
      .then(function (html) { if (swap(html)) finished(); else setTimeout(poll, POLL_MS); })
      .catch(function () { setTimeout(poll, RETRY_MS); });
  }

  announce(live.dataset.announce);  // the region starts with the state the page opened in
  setTimeout(poll, POLL_MS);
})();
