(function () {
  "use strict";
  var panel = document.getElementById("panel");
  var body = panel.querySelector(".panel-body");
  var active = null;

  function openCell(anchor, push) {
    var source = document.getElementById(anchor);
    if (!source) { return false; }
    body.innerHTML = source.querySelector(".ev-body").innerHTML;
    panel.hidden = false;
    panel.scrollTop = 0;
    if (active) { active.classList.remove("active"); }
    var link = document.querySelector("td.cell a[data-cell='" + CSS.escape(anchor) + "']");
    active = link ? link.parentNode : null;
    if (active) { active.classList.add("active"); }
    if (push && history.replaceState) { history.replaceState(null, "", "#" + anchor); }
    return true;
  }

  function closePanel() {
    panel.hidden = true;
    if (active) { active.classList.remove("active"); active = null; }
    if (history.replaceState) { history.replaceState(null, "", location.pathname + location.search); }
  }

  document.addEventListener("click", function (event) {
    var link = event.target.closest("a[data-cell]");
    if (link) {
      if (openCell(link.getAttribute("data-cell"), true)) { event.preventDefault(); }
      return;
    }
    var copy = event.target.closest("button.copy");
    if (copy) {
      var text = copy.parentNode.querySelector("code").textContent;
      var done = function () {
        copy.textContent = "copied";
        copy.classList.add("done");
        setTimeout(function () { copy.textContent = "copy"; copy.classList.remove("done"); }, 1500);
      };
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(text).then(done, function () { selectText(copy); });
      } else {
        selectText(copy);
      }
      return;
    }
    if (event.target.closest("#panel .close")) { closePanel(); }
  });

  // Without clipboard access (a file:// page in some browsers), select the text for Ctrl-C.
  function selectText(button) {
    var range = document.createRange();
    range.selectNodeContents(button.parentNode.querySelector("code"));
    var selection = window.getSelection();
    selection.removeAllRanges();
    selection.addRange(range);
    button.textContent = "press Ctrl-C";
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) { closePanel(); }
  });

  // Status filters: a pressed chip shows its status; released, its cells fade in the grids and leave the lists.
  var chips = document.querySelectorAll(".chip[data-status]");
  Array.prototype.forEach.call(chips, function (chip) {
    chip.addEventListener("click", function () {
      var shown = chip.getAttribute("aria-pressed") !== "true";
      chip.setAttribute("aria-pressed", shown ? "true" : "false");
      var status = chip.getAttribute("data-status");
      var nodes = document.querySelectorAll("[data-status='" + CSS.escape(status) + "']");
      Array.prototype.forEach.call(nodes, function (node) {
        if (node.classList.contains("chip")) { return; }
        if (node.tagName === "TD") { node.classList.toggle("filtered", !shown); }
        else { node.classList.toggle("hidden-row", !shown); }
      });
    });
  });

  // A link to #cell-N opens that cell's evidence beside its grid, not at the bottom of the page.
  if (location.hash.length > 1 && openCell(decodeURIComponent(location.hash.slice(1)), false)) {
    window.addEventListener("load", function () {
      if (active) { active.scrollIntoView({block: "center"}); } else { window.scrollTo(0, 0); }
    });
  }
})();
