// What only script can add to coe's pages; every page works without it.
// - A warning before leaving a page with typed text that is not saved (a page whose
//   form came back with text kept, `data-unsaved`, counts from the start).
// - Ctrl+S / Cmd+S saves the form being typed in (its own Save button).
// - Enter in a one-line field presses the button of the part it is in (a page that is
//   one form would otherwise press its first button).
// - After a save, the section saved is shown where it was on the screen.
// - A field for a person (`data-people`) offers, as a person types, the people of the
//   directory who match (`/people/find`); without script it takes an address. A field
//   for a team (`data-teams`) offers the teams (`/teams/find`).
(function () {
  "use strict";
  var dirty = new Set();
  var submitting = false;

  function formOf(field) {
    return field.form || null;
  }

  document.querySelectorAll("form[data-unsaved]").forEach(function (form) {
    dirty.add(form);
  });

  document.addEventListener("input", function (event) {
    var form = formOf(event.target);
    if (form && form.method.toLowerCase() === "post") {
      dirty.add(form);
    }
  });

  document.addEventListener("submit", function (event) {
    submitting = true;
    var submitter = event.submitter;
    var section = submitter && submitter.closest("section[id]");
    if (section) {
      try {
        sessionStorage.setItem(
          "coe-scroll",
          JSON.stringify({
            path: location.pathname,
            id: section.id,
            top: section.getBoundingClientRect().top,
          })
        );
      } catch (e) {
        // Storage may be off: the page still lands at the section.
      }
    }
  });

  window.addEventListener("beforeunload", function (event) {
    if (!submitting && dirty.size > 0) {
      event.preventDefault();
      event.returnValue = "";
    }
  });

  document.addEventListener("keydown", function (event) {
    var target = event.target;
    if (
      event.key === "Enter" &&
      target.tagName === "INPUT" &&
      !/^(checkbox|radio|submit|button)$/.test(target.type)
    ) {
      var part = target.closest("[data-part]");
      var own = part && part.querySelector('button[type="submit"]');
      if (own) {
        event.preventDefault();
        own.click();
      }
      return;
    }
    if (!(event.ctrlKey || event.metaKey) || event.key.toLowerCase() !== "s") {
      return;
    }
    var field = document.activeElement;
    var form = field && formOf(field);
    if (!form) {
      return;
    }
    event.preventDefault();
    // The Save button of the section typed in, else the form's first button.
    var section = field.closest("section[id]");
    var part = field.closest("[data-part]");
    var button =
      (part && part.querySelector('button[type="submit"]')) ||
      (section && section.querySelector('button[name="save"]')) ||
      form.querySelector('button[type="submit"]:not([name="preview"])');
    if (button) {
      button.click();
    }
  });

  document.querySelectorAll("input[data-people], input[data-teams]").forEach(function (field) {
    var teams = field.hasAttribute("data-teams");
    var list = document.createElement("datalist");
    list.id = field.id + "-found";
    field.setAttribute("list", list.id);
    field.insertAdjacentElement("afterend", list);
    var asked = "";
    var timer = null;
    field.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(function () {
        var text = field.value.trim();
        if (text.length < (teams ? 1 : 2) || text === asked) {
          return;
        }
        asked = text;
        fetch((teams ? "/teams/find?q=" : "/people/find?q=") + encodeURIComponent(text), {
          credentials: "same-origin",
          headers: { Accept: "application/json" },
        })
          .then(function (answer) {
            return answer.ok ? answer.json() : { people: [] };
          })
          .then(function (answer) {
            if (asked !== text) {
              return;
            }
            list.textContent = "";
            (answer.teams || []).forEach(function (team) {
              var option = document.createElement("option");
              option.value = team;
              list.appendChild(option);
            });
            (answer.people || []).forEach(function (person) {
              var option = document.createElement("option");
              option.value = person.email;
              option.label =
                (person.name || person.email) + (person.team ? " · " + person.team : "");
              list.appendChild(option);
            });
          })
          .catch(function () {
            // Offline or signed out: the field still takes an address.
          });
      }, 150);
    });
  });

  window.addEventListener("DOMContentLoaded", function () {
    var saved;
    try {
      saved = JSON.parse(sessionStorage.getItem("coe-scroll") || "null");
      sessionStorage.removeItem("coe-scroll");
    } catch (e) {
      saved = null;
    }
    if (!saved || saved.path !== location.pathname) {
      return;
    }
    var section = document.getElementById(saved.id);
    if (section) {
      window.scrollBy(0, section.getBoundingClientRect().top - saved.top);
    }
  });
})();
