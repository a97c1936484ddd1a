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
// - A draft's sections (`data-autosave`) are saved a few seconds after typing stops
//   and as the page is left, each against the revision it started from (nothing of
//   another tab or person is overwritten); while one is typed and not saved, the
//   checklist says so instead of "is empty".
// - A value to paste elsewhere (`data-copy`: a webhook's address) gets a Copy button.
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

  // Sections typed and not saved yet, by key, on a page that saves them as typed.
  var pending = new Set();
  var autosaveForm = document.querySelector("form[data-autosave]");
  var autosaveTimer = null;
  var AUTOSAVE_AFTER_MS = 3000;

  function sectionKey(field) {
    var name = field.name || "";
    return name.indexOf("text:") === 0 && !field.hasAttribute("aria-invalid")
      ? name.slice(5)
      : null;
  }

  function say(key, words) {
    var status = document.getElementById("autosaved-" + key);
    if (status) {
      status.textContent = words;
    }
  }

  function checklistSays(key, words) {
    var item = document.querySelector('#missing li[data-section="' + key + '"] .problem');
    if (item) {
      item.textContent = words;
    }
  }

  // The checks' words at section `key` (`problems`), or "typed, not saved yet".
  function sectionSays(key, problems) {
    var place = document.querySelector("section#" + CSS.escape(key) + " .section-problems");
    if (!place) {
      return;
    }
    place.textContent = "";
    problems.forEach(function (problem) {
      var line = document.createElement("p");
      line.className = "warning-text";
      line.textContent = problem;
      place.appendChild(line);
    });
  }

  // The checklist as the server now sees the COE.
  function rebuildChecklist(missing) {
    var list = document.getElementById("missing");
    if (!list) {
      return;
    }
    list.textContent = "";
    missing.forEach(function (finding) {
      var item = document.createElement("li");
      item.setAttribute("data-section", finding.section);
      var link = document.createElement("a");
      link.href = "#" + finding.section;
      link.textContent = finding.at;
      var problem = document.createElement("span");
      problem.className = "problem";
      problem.textContent = pending.has(finding.section) ? "typed, not saved yet" : finding.problem;
      item.appendChild(link);
      item.appendChild(document.createTextNode(": "));
      item.appendChild(problem);
      list.appendChild(item);
    });
  }

  // What is typed and pending, as the form would send it, with the page's version.
  function pendingBody() {
    var body = new URLSearchParams();
    body.append("csrf", autosaveForm.querySelector('input[name="csrf"]').value);
    var version = autosaveForm.querySelector('input[name="version"]');
    if (version) {
      body.append("version", version.value);
    }
    pending.forEach(function (key) {
      var text = autosaveForm.querySelector('textarea[name="text:' + key + '"]');
      var seen = autosaveForm.querySelector('input[name="seen:' + key + '"]');
      if (text && seen) {
        body.append("text:" + key, text.value);
        body.append("seen:" + key, seen.value);
      }
    });
    return body;
  }

  var inFlight = false;

  function autosave(leaving) {
    clearTimeout(autosaveTimer);
    if (!autosaveForm || pending.size === 0 || submitting) {
      return;
    }
    // One request at a time: typing during one is saved after it.
    if (inFlight && leaving !== true) {
      autosaveTimer = setTimeout(autosave, AUTOSAVE_AFTER_MS, false);
      return;
    }
    inFlight = true;
    var sent = {};
    pending.forEach(function (key) {
      var text = autosaveForm.querySelector('textarea[name="text:' + key + '"]');
      sent[key] = text ? text.value : "";
      say(key, "Saving…");
    });
    fetch(autosaveForm.getAttribute("data-autosave"), {
      method: "POST",
      credentials: "same-origin",
      headers: { Accept: "application/json" },
      body: pendingBody(),
      // Leaving the page: the request outlives it.
      keepalive: leaving === true,
    })
      .then(function (answer) {
        if (!answer.ok) {
          throw new Error(String(answer.status));
        }
        return answer.json();
      })
      .then(function (answer) {
        inFlight = false;
        var at = new Date().toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
        // The page's version moves with its own saves only (another person's change
        // since the page was loaded is still seen by the page's other forms).
        var version = autosaveForm.querySelector('input[name="version"]');
        if (version && answer.version !== null) {
          version.value = String(answer.version);
        }
        answer.saved.forEach(function (saved) {
          var seen = autosaveForm.querySelector('input[name="seen:' + saved.key + '"]');
          if (seen) {
            seen.value = saved.revision;
          }
        });
        var unsettled = new Set();
        answer.conflicts.forEach(function (c) {
          unsettled.add(c.key);
        });
        answer.refused.forEach(function (r) {
          unsettled.add(r.key);
        });
        // Saved, or already so on the server: settled, unless typed on meanwhile.
        Object.keys(sent).forEach(function (key) {
          var text = autosaveForm.querySelector('textarea[name="text:' + key + '"]');
          if (!unsettled.has(key) && text && text.value === sent[key]) {
            pending.delete(key);
            say(key, "Saved at " + at + ".");
          }
        });
        answer.conflicts.forEach(function (conflict) {
          say(
            conflict.key,
            "Not saved: " + conflict.by + " saved this section meanwhile. Press Save to see both and merge them."
          );
        });
        answer.refused.forEach(function (refused) {
          say(refused.key, "Not saved: " + refused.problem + ".");
        });
        rebuildChecklist(answer.missing);
        Object.keys(answer.problems).forEach(function (key) {
          var said = answer.problems[key];
          if (!pending.has(key)) {
            sectionSays(key, said.problems);
          }
          var mark = document.querySelector("#h-" + CSS.escape(key) + " .mark.ok, #h-" + CSS.escape(key) + " .mark.todo");
          if (mark && said.required) {
            mark.className = said.complete ? "mark ok" : "mark todo";
            mark.textContent = said.complete ? "✓ complete" : "to do";
          }
        });
        // Only what is still typed and not saved may be lost by leaving now.
        if (pending.size === 0 && !otherTyped) {
          dirty.delete(autosaveForm);
        }
      })
      .catch(function () {
        inFlight = false;
        pending.forEach(function (key) {
          say(key, "Not saved automatically: press Save.");
        });
      });
  }

  // Anything typed on the page but the sections (a timeline entry, an action), or
  // kept unsaved by the server from the last form.
  var otherTyped = !!(autosaveForm && autosaveForm.hasAttribute("data-unsaved"));

  document.addEventListener("input", function (event) {
    var form = formOf(event.target);
    if (!form || form.method.toLowerCase() !== "post") {
      return;
    }
    dirty.add(form);
    var key = form === autosaveForm ? sectionKey(event.target) : null;
    if (key === null) {
      otherTyped = true;
      return;
    }
    pending.add(key);
    say(key, "Typed, not saved yet.");
    checklistSays(key, "typed, not saved yet");
    sectionSays(key, ["typed, not saved yet"]);
    clearTimeout(autosaveTimer);
    autosaveTimer = setTimeout(autosave, AUTOSAVE_AFTER_MS, false);
  });

  // Leaving the page (another tab, closing it): what is pending is saved now.
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "hidden" && pending.size > 0 && !submitting) {
      autosave(true);
    }
  });

  document.addEventListener("submit", function (event) {
    submitting = true;
    clearTimeout(autosaveTimer);
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
      // The part's own button: the one marked default, else its first.
      var own =
        part &&
        (part.querySelector('button[data-default]') ||
          part.querySelector('button[type="submit"]'));
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
      (part && part.querySelector('button[data-default]')) ||
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
  document.querySelectorAll("[data-copy]").forEach(function (value) {
    if (!navigator.clipboard) {
      return; // Not a secure page: the value is selected and copied by hand.
    }
    var button = document.createElement("button");
    button.type = "button";
    button.className = "link copy";
    button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy " + value.getAttribute("data-copy"));
    button.addEventListener("click", function () {
      navigator.clipboard.writeText(value.textContent.trim()).then(
        function () {
          button.textContent = "Copied";
        },
        function () {
          button.textContent = "Select it and copy it";
        }
      );
    });
    value.insertAdjacentText("afterend", " ");
    value.parentNode.insertBefore(button, value.nextSibling.nextSibling);
  });
})();
