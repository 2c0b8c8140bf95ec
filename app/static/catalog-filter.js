// The catalog page's chip filter: hides the table rows whose id, name, vendor and aliases do
// not contain every word typed. Without JavaScript the box stays hidden and the table is whole.
(function () {
  "use strict";
  var box = document.getElementById("chip-filter-box");
  var input = document.getElementById("chip-filter");
  var count = document.getElementById("chip-filter-count");
  var none = document.getElementById("chip-filter-none");
  if (!box || !input) { return; }
  var rows = Array.prototype.slice.call(document.querySelectorAll("#chip-table tbody tr[data-search]"));
  function apply() {
    var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var shown = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search");
      var match = words.every(function (w) { return text.indexOf(w) !== -1; });
      row.hidden = !match;
      if (match) { shown += 1; }
    });
    none.hidden = shown > 0;
    count.textContent = words.length ? shown + " of " + rows.length + " chips" : "";
  }
  input.addEventListener("input", apply);
  box.hidden = false;
  apply();
}());
