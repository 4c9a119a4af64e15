// Keyboard access to boxes that scroll sideways (a wide table on a phone): a .table-wrap or .scroll-box whose
// content is wider than itself gets tabindex=0, role=region and a name, so a keyboard user can focus it and
// scroll it with the arrow keys (WCAG 2.1.1; axe's scrollable-region-focusable). Checked again on resize.
(function () {
  "use strict";
  var BOXES = ".table-wrap, .scroll-box";

  function name(box) {
    var caption = box.querySelector("caption");
    if (caption && caption.textContent.trim()) return caption.textContent.trim();
    var prev = box.previousElementSibling;
    if (prev && /^H[1-6]$/.test(prev.tagName)) return prev.textContent.trim();
    return "Table (scrolls sideways)";
  }

  function mark() {
    document.querySelectorAll(BOXES).forEach(function (box) {
      var scrolls = box.scrollWidth > box.clientWidth + 1;
      if (scrolls && !box.hasAttribute("tabindex")) {
        box.tabIndex = 0;
        box.dataset.scrollFocus = "1";
        if (!box.hasAttribute("role")) box.setAttribute("role", "region");
        if (!box.hasAttribute("aria-label") && !box.hasAttribute("aria-labelledby")) box.setAttribute("aria-label", name(box));
      } else if (!scrolls && box.dataset.scrollFocus) {
        box.removeAttribute("tabindex");
        delete box.dataset.scrollFocus;
      }
    });
  }

  var timer = null;
  window.addEventListener("resize", function () { clearTimeout(timer); timer = setTimeout(mark, 150); });
  mark();
})();
