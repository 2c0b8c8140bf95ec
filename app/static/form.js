// The check form shows only the fields of the chosen workload kind and phase, and says what
// the measured time covers. Progressive enhancement: without this script every field stays
// visible and the server reads only those that apply (app/web/forms.py, `applies`).
// A field that does not apply is hidden and disabled, so that its value is not sent.
"use strict";
(() => {
  const form = document.getElementById("check");
  if (!form) return;
  // by id: a control named `elements` hides the form's own `elements` property
  const kind = document.getElementById("f-kind");
  const phase = document.getElementById("f-phase");
  const model = document.getElementById("f-model");
  const config = document.getElementById("f-config");
  const covers = document.getElementById("f-measured_ms-covers");
  const fed = document.getElementById("f-fed");

  // data-kinds and data-phases list where an element applies (absent: everywhere);
  // a phase restricts a transformer's fields only, and data-fed (the input pipeline's) to a
  // transformer fed by one
  const listed = (element, name, value) => {
    const list = element.dataset[name];
    return list === undefined || list.split(" ").includes(value);
  };
  const appliesHere = (element) =>
    listed(element, "kinds", kind.value) &&
    (kind.value !== "transformer" ||
      (listed(element, "phases", phase.value) &&
        (element.dataset.fed === undefined || (fed && fed.value === "true"))));
  // an element applies when it and every scoped element around it do
  const applies = (element) => {
    for (let e = element; e && e !== form; e = e.parentElement) {
      if (!appliesHere(e)) return false;
    }
    return true;
  };

  const update = () => {
    for (const element of form.querySelectorAll("[data-kinds], [data-phases], [data-fed]")) {
      element.hidden = !appliesHere(element);
    }
    for (const control of form.querySelectorAll("input, select, textarea")) {
      control.disabled = !applies(control);
    }
    // a fieldset whose fields all do not apply goes too, legend and all
    for (const fieldset of form.querySelectorAll("fieldset")) {
      const fields = [...fieldset.querySelectorAll(".field")];
      fieldset.hidden = fields.length > 0 && fields.every((field) => !applies(field));
    }
    // a pasted config stands in for the catalog model
    if (model && config && !model.disabled) model.disabled = config.value.trim() !== "";
    // the same words as forms.covers()
    if (covers) {
      const key = kind.value === "transformer" ? phase.value : kind.value;
      const words = covers.dataset[key] ?? covers.dataset.kernel;
      covers.querySelector("strong").textContent = words;
    }
  };

  // after a check (the form posts to /#answer), the keyboard and a screen reader start at
  // the answer, not at the top; a shared answer's URL opens at the top as usual
  const answer = document.getElementById("answer");
  if (answer && location.hash === "#answer") answer.focus();

  kind.addEventListener("change", update);
  phase.addEventListener("change", update);
  if (fed) fed.addEventListener("change", update);
  if (config) config.addEventListener("input", update);
  update();
})();
