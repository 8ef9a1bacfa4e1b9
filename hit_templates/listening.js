// The listening gate shared by the HIT templates (preference.html, level_judgment.html).
// Reads the JSON block #crowdprefs-config: mode, clips (names NAME with elements clip-NAME,
// state-NAME and hidden fields plays_NAME, listen_NAME), min_coverage, slack and texts. The form
// #crowdprefs-hit can be sent only once every clip has played to the end (in MTurk's preview
// and in preview mode never); the browser's own validation checks the answer fields.
// A clip counts as heard by the rule the server checks again (crowdprefs.campaign.answers.
// check_listening): played to its end, and heard (seconds of playing, as sent in listen_NAME)
// for at least min_coverage of its duration less slack seconds. Clips play at normal speed: a
// faster rate is set back to 1 (heard faster, a clip would not count).
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("crowdprefs-config").textContent);
  var form = document.getElementById("crowdprefs-hit");
  var submit = document.getElementById("crowdprefs-submit");
  var status = document.getElementById("crowdprefs-status");
  var params = new URLSearchParams(window.location.search);
  var opened = performance.now();
  var preview = config.mode === "preview";

  if (config.mode === "mturk") {
    // MTurk shows the HIT with assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE until it is accepted.
    var assignment = params.get("assignmentId");
    preview = !assignment || assignment === "ASSIGNMENT_ID_NOT_AVAILABLE";
    if (!preview) {
      document.getElementById("assignmentId").value = assignment;
      var to = params.get("turkSubmitTo");
      if (to && /^https:\/\/(www|workersandbox)\.mturk\.com\/?$/.test(to)) {
        form.action = to.replace(/\/$/, "") + "/mturk/externalSubmit";
      }
    }
  }

  var names = config.clips;  // the clips that must be heard: ids clip-NAME, state-NAME
  var state = {};

  function field(name) {
    return form.querySelector("input[name='" + name + "']");
  }

  function coverage(audio) {
    var heard = 0;
    for (var i = 0; i < audio.played.length; i++) {
      heard += audio.played.end(i) - audio.played.start(i);
    }
    return audio.duration > 0 ? heard / audio.duration : 0;
  }

  function heard(audio, s) {
    var sent = Number(s.listened.toFixed(1));  // what listen_NAME reports
    return coverage(audio) >= config.min_coverage &&
      sent + config.slack >= config.min_coverage * audio.duration;
  }

  function allPlayed() {
    return names.every(function (name) { return state[name].complete; });
  }

  function update() {
    names.forEach(function (name) {
      var s = state[name];
      field("plays_" + name).value = String(s.plays);
      field("listen_" + name).value = s.listened.toFixed(1);
      var label = document.getElementById("state-" + name);
      label.textContent = s.complete ? config.texts.played : config.texts.not_played;
      label.classList.toggle("done", s.complete);
    });
    var ready = !preview && allPlayed();
    submit.disabled = !ready;
    if (!preview) {
      status.textContent = ready ? config.texts.ready : config.texts.play_all;
    }
  }

  names.forEach(function (name) {
    var audio = document.getElementById("clip-" + name);
    var s = (state[name] = { plays: 0, listened: 0, started: null, complete: false });
    function stop() {
      if (s.started !== null) {
        s.listened += (performance.now() - s.started) / 1000;
        s.started = null;
      }
      update();
    }
    audio.addEventListener("playing", function () { s.started = performance.now(); });
    audio.addEventListener("ratechange", function () {
      if (audio.playbackRate !== 1) { audio.playbackRate = 1; }
    });
    audio.addEventListener("pause", stop);
    audio.addEventListener("ended", function () {
      stop();
      s.plays += 1;
      if (heard(audio, s)) { s.complete = true; }
      update();
    });
  });

  if (preview) {
    document.getElementById("crowdprefs-preview").hidden = false;
    status.textContent = config.texts.preview;
    form.querySelectorAll("input, textarea, button").forEach(function (el) { el.disabled = true; });
    names.forEach(function (name) { document.getElementById("clip-" + name).controls = true; });
  }

  form.addEventListener("submit", function (event) {
    if (preview || !allPlayed()) {
      event.preventDefault();
      return;
    }
    field("seconds_on_page").value = ((performance.now() - opened) / 1000).toFixed(1);
  });

  update();
})();
