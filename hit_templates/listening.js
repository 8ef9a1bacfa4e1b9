// The listening gate shared by the HIT templates (preference.html, level_judgment.html).
// Reads the JSON block #crowdprefs-config: mode, clips (names NAME with elements clip-NAME,
// state-NAME and hidden fields plays_NAME, listen_NAME and, where the template has them,
// cover_NAME, seeks_NAME, muted_NAME, spans_NAME), min_coverage, slack and texts. The form
// #crowdprefs-hit can be sent only once every clip was heard to its end (in MTurk's preview and
// in preview mode never); the browser's own validation checks the answer fields.
// A clip counts as heard by the rule the server checks again (crowdprefs.campaign.answers.
// check_listening): played to its end, heard (seconds of audible playing at rate 1, as sent in
// listen_NAME) for at least min_coverage of its duration less slack seconds, and covered for as
// much by the intervals heard (spans_NAME, merged: a part replayed counts once, a part skipped by
// a seek never). Only audible playing at rate 1 is heard: time played muted or at volume 0 is
// counted apart (muted_NAME), time at another rate not at all (and the rate is set back to 1).
// An interval is credited no further than the wall-clock time it lasted, so a player that plays
// faster than it tells the page covers no more than it had time to. The page cannot see the
// system's volume, the output device or whether anyone wears the headphones.
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
  var MAX_SPANS = 200;  // crowdprefs.campaign.answers.MAX_SPANS
  var proto = HTMLMediaElement.prototype;
  // the element's own getters: a script that redefines them on the element cannot hide a rate
  var getRate = Object.getOwnPropertyDescriptor(proto, "playbackRate").get;
  var getMuted = Object.getOwnPropertyDescriptor(proto, "muted").get;
  var getVolume = Object.getOwnPropertyDescriptor(proto, "volume").get;

  function field(name) {
    return form.querySelector("input[name='" + name + "']");
  }

  function setField(name, value) {
    var input = field(name);
    if (input) { input.value = value; }
  }

  function silent(audio) {
    return getMuted.call(audio) || getVolume.call(audio) === 0;
  }

  function merge(spans) {
    var sorted = spans.slice().sort(function (x, y) { return x[0] - y[0]; });
    var merged = [];
    sorted.forEach(function (span) {
      var last = merged[merged.length - 1];
      if (last && span[0] <= last[1]) {
        last[1] = Math.max(last[1], span[1]);
      } else if (span[1] > span[0]) {
        merged.push([span[0], span[1]]);
      }
    });
    while (merged.length > MAX_SPANS) {  // keep the log bounded: the shortest go first
      var shortest = 0;
      merged.forEach(function (span, i) {
        if (span[1] - span[0] < merged[shortest][1] - merged[shortest][0]) { shortest = i; }
      });
      merged.splice(shortest, 1);
    }
    return merged;
  }

  function covered(s, duration) {
    var seconds = 0;
    s.spans.forEach(function (span) {
      seconds += Math.max(Math.min(span[1], duration) - span[0], 0);
    });
    return duration > 0 ? Math.min(seconds / duration, 1) : 0;
  }

  function heard(audio, s) {
    var sent = Number(s.listened.toFixed(1));  // what listen_NAME reports
    var need = config.min_coverage * audio.duration;
    return covered(s, audio.duration) * audio.duration + config.slack >= need &&
      sent + config.slack >= need;
  }

  function allPlayed() {
    return names.every(function (name) { return state[name].complete; });
  }

  function update() {
    names.forEach(function (name) {
      var s = state[name];
      var audio = document.getElementById("clip-" + name);
      setField("plays_" + name, String(s.plays));
      setField("listen_" + name, s.listened.toFixed(1));
      setField("cover_" + name, covered(s, audio.duration).toFixed(4));
      setField("seeks_" + name, String(s.seeks));
      setField("muted_" + name, s.muted.toFixed(1));
      setField("spans_" + name, s.spans.map(function (span) {
        return span[0].toFixed(2) + "-" + span[1].toFixed(2);
      }).join(" "));
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
    var s = (state[name] = {
      plays: 0, listened: 0, muted: 0, seeks: 0, spans: [], complete: false,
      started: null, from: null, silentSince: null, last: 0, atEnd: false
    });

    // Close what is being counted at `position` (the clip's time now, or where a seek left).
    function close(position) {
      var now = performance.now();
      if (s.started !== null) {
        var wall = (now - s.started) / 1000;
        s.listened += wall;
        // no further than the wall-clock time allows (plus the players' time-update jitter)
        var end = Math.min(position, s.from + wall * 1.02 + 0.25);
        if (end > s.from) { s.spans = merge(s.spans.concat([[s.from, end]])); }
      }
      if (s.silentSince !== null) { s.muted += (now - s.silentSince) / 1000; }
      s.started = s.from = s.silentSince = null;
    }

    // Start counting again if the clip is playing: heard when audible at rate 1.
    function open() {
      if (audio.paused || audio.ended || audio.seeking) { return; }
      if (silent(audio)) {
        s.silentSince = performance.now();
      } else if (getRate.call(audio) === 1) {
        s.started = performance.now();
        s.from = audio.currentTime;
      }
    }

    function change() {
      close(audio.currentTime);
      open();
      update();
    }

    audio.addEventListener("playing", change);
    audio.addEventListener("volumechange", change);
    audio.addEventListener("ratechange", function () {
      change();
      if (getRate.call(audio) !== 1) { audio.playbackRate = 1; }
    });
    audio.addEventListener("timeupdate", function () {
      if (!audio.seeking) { s.last = audio.currentTime; }
    });
    audio.addEventListener("seeking", function () {
      close(s.last);  // the clip's time already is where the seek goes
      if (!s.atEnd) { s.seeks += 1; }  // replaying from the end seeks to 0: no skip
      update();
    });
    audio.addEventListener("seeked", function () {
      s.atEnd = false;
      s.last = audio.currentTime;
      close(audio.currentTime);
      open();
    });
    audio.addEventListener("pause", function () {
      close(audio.currentTime);
      update();
    });
    audio.addEventListener("ended", function () {
      close(audio.duration);
      s.plays += 1;
      s.atEnd = true;
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
