/*
 * samedevice explain, in the browser: paste a PyTorch device error, get its template, the
 * likely root causes with their evidence, and the pages to read. Offline, no libraries.
 *
 * This is a port of the Python engine (src/samedevice/explain: clean.py, messages.py,
 * frames.py, evidence.py, engine.py). Every pattern, keyword and weight comes from the data
 * file written at build time (explain-data.js / explain-data.json, from
 * samedevice.explain.browser.build_data), so both engines interpret the same rules;
 * tests/explain/test_parity.py runs this file under node and requires identical results.
 *
 * Pasted text is only ever shown with textContent: it is never parsed as HTML.
 */
(function (root) {
  "use strict";

  // ---------------------------------------------------------------------------------------
  // Regex dialect (src/samedevice/explain/dialect.py): the data holds patterns already
  // expanded and converted to JavaScript's named-group spelling. "ci" patterns are
  // case-insensitive; "exact" ones run on lower-cased text.
  var cache = new Map();
  function rx(pattern, flags) {
    var key = flags + "\u0000" + pattern;
    var r = cache.get(key);
    if (!r) {
      r = new RegExp(pattern, flags);
      cache.set(key, r);
    }
    return r;
  }
  function ci(pattern) { return rx(pattern, "im"); }
  function ciGlobal(pattern) { return rx(pattern, "gim"); }
  function exact(pattern) { return rx(pattern, "md"); }
  function search(pattern, text) { return ci(pattern).exec(text); }

  var WHITESPACE = /[ \t\n\r\f\v]+/g; // Python's ASCII \s
  function collapse(line) { return line.replace(WHITESPACE, " "); }
  function stripSpaces(s) { return s.replace(/^ +| +$/g, ""); }
  function asciiLower(s) { return s.replace(/[A-Z]+/g, function (m) { return m.toLowerCase(); }); }
  function isAscii(s) { return /^[\x00-\x7f]*$/.test(s); }
  function count(text, ch, from, to) {
    var n = 0;
    var i = text.indexOf(ch, from);
    while (i >= 0 && i < to) { n++; i = text.indexOf(ch, i + 1); }
    return n;
  }
  function replaceAll(s, a, b) { return s.split(a).join(b); }

  // ---------------------------------------------------------------------------------------
  // Input checks and cleaning (clean.py)
  function InputError(message) { this.name = "InputError"; this.message = message; }
  InputError.prototype = Object.create(Error.prototype);

  var TEXT_CONTROLS = "\t\n\r\x1b\x0c\x08";
  function checkText(text) {
    if (!text.trim()) throw new InputError("the input is empty; paste the error message or the whole traceback");
    if (text.indexOf("\u0000") >= 0) throw new InputError("the input looks binary (it contains NUL bytes); paste the error as text");
    var sample = text.slice(0, 65536);
    var controls = 0;
    for (var i = 0; i < sample.length; i++) {
      var c = sample.charCodeAt(i);
      if (c < 32 && TEXT_CONTROLS.indexOf(sample[i]) < 0) controls++;
    }
    if (controls > Math.max(8, Math.floor(sample.length / 100))) {
      throw new InputError("the input looks binary (too many control characters); paste the error as text");
    }
  }

  var ASTRAL = /[\uD800-\uDBFF][\uDC00-\uDFFF]|[\uD800-\uDFFF]/g;
  function fold(line, charMap) {
    line = line.normalize("NFKC");
    for (var i = 0; i < charMap.length; i++) {
      if (line.indexOf(charMap[i][0]) >= 0) line = replaceAll(line, charMap[i][0], charMap[i][1]);
    }
    return line.replace(ASTRAL, "\ufffd");
  }

  function decodeEntities(text, entity, named) {
    return text.replace(ciGlobal(entity), function (whole, body) {
      if (body[0] === "#") {
        var code = (body[1] === "x" || body[1] === "X") ? parseInt(body.slice(2), 16) : parseInt(body.slice(1), 10);
        if (isNaN(code) || code < 32 || (code >= 0xd800 && code <= 0xdfff) || code > 0x10ffff) return whole;
        return String.fromCodePoint(code);
      }
      var v = named[body.toLowerCase()];
      return v === undefined ? whole : v;
    });
  }

  function cleanLines(text, kb) {
    var rules = kb.clean;
    text = text.replace(/\r\n/g, "\n").replace(/\r/g, "\n");
    if (text.indexOf("&") >= 0) text = decodeEntities(text, rules.entity, rules.entities);
    if (text.indexOf("\x1b") >= 0 || text.indexOf("[") >= 0) text = text.replace(ciGlobal(rules.ansi), "");
    if (!isAscii(text)) {
      text = text.split("\n").map(function (line) { return isAscii(line) ? line : fold(line, rules.char_map); }).join("\n");
    }
    if (text.indexOf("\t") >= 0) text = text.replace(/\t/g, " ");
    text = text.replace(ciGlobal(rules.prefix), "");
    return text.split("\n");
  }

  // ---------------------------------------------------------------------------------------
  // Messages (messages.py)
  function findErrors(lines, kb) {
    var text = lines.join("\n");
    var low = text.toLowerCase();
    var anchor = rx(kb.messages.anchor, "gm");
    anchor.lastIndex = 0;
    var hitLines = [];
    var line = 0;
    var pos = 0;
    var m;
    while ((m = anchor.exec(low)) !== null) {
      line += count(low, "\n", pos, m.index);
      pos = m.index;
      if (!hitLines.length || hitLines[hitLines.length - 1] !== line) {
        hitLines.push(line);
        if (hitLines.length >= kb.messages.max_windows) break;
      }
    }
    var errors = [];
    readHits(hitLines, lines, kb, errors);
    if (low.indexOf("\n") >= 0 && errors.every(function (e) { return e.partial; })) {
      // messages.py: a terminal that wraps at a fixed width cuts words; search once more with the
      // line breaks removed when nothing, or only a truncated shape, was found
      var tried = new Set(hitLines);
      var extra = joinedAnchorHits(low, anchor, kb.messages.max_windows).filter(function (k) { return !tried.has(k); });
      if (extra.length) {
        var all = hitLines.concat(extra).sort(function (a, b) { return a - b; });
        all = all.filter(function (k, i) { return i === 0 || all[i - 1] !== k; }).slice(0, kb.messages.max_windows);
        errors = [];
        readHits(all, lines, kb, errors);
      }
    }
    return errors;
  }

  function readHits(hitLines, lines, kb, errors) {
    var byKey = new Map();
    var consumed = -1;
    for (var h = 0; h < hitLines.length; h++) {
      var first = hitLines[h];
      if (first <= consumed) continue;
      var found = readWindow(lines, first, kb);
      if (found === null) continue;
      var error = found[0];
      consumed = found[1];
      var span = [error.line - 1, found[1], error.lead];
      delete error.lead;
      var key = JSON.stringify([error.template, error.form, error.op, error.argument, error.devices]);
      if (byKey.has(key)) {
        byKey.get(key).count += 1;
        byKey.get(key).spans.push(span);
        continue;
      }
      if (errors.length >= kb.clean.max_messages) continue;
      error.spans = [span];
      byKey.set(key, error);
      errors.push(error);
    }
  }

  // messages.py _joined_hits: lines where an anchor starts in the paste with every break removed
  function joinedAnchorHits(low, anchor, limit) {
    var shifted = [];
    var at = low.indexOf("\n");
    while (at >= 0) {
      shifted.push(at - shifted.length);
      at = low.indexOf("\n", at + 1);
    }
    var joined = low.split("\n").join("");
    var hits = [];
    var m;
    anchor.lastIndex = 0;
    while ((m = anchor.exec(joined)) !== null) {
      // bisect_right(shifted, m.index)
      var lo = 0, hi = shifted.length;
      while (lo < hi) {
        var mid = (lo + hi) >> 1;
        if (shifted[mid] <= m.index) lo = mid + 1; else hi = mid;
      }
      if (!hits.length || hits[hits.length - 1] !== lo) {
        hits.push(lo);
        if (hits.length >= limit) break;
      }
    }
    return hits;
  }

  var SPACES = [" ", "\t", "\f", "\v"];
  function join(window, hard) {
    var out = stripSpaces(collapse(window[0]));
    var starts = [0];
    for (var i = 1; i < window.length; i++) {
      var prev = window[i - 1];
      var nxt = window[i];
      var glue = " ";
      if (hard && SPACES.indexOf(prev.slice(-1)) < 0 && SPACES.indexOf(nxt.slice(0, 1)) < 0) glue = "";
      out += glue;
      starts.push(out.length);
      out += stripSpaces(collapse(nxt));
    }
    return [out, starts];
  }

  function lineOf(offset, starts) {
    var k = 0;
    for (var i = 0; i < starts.length; i++) if (starts[i] <= offset) k = i;
    return k;
  }

  function lessThan(a, b) {
    for (var i = 0; i < a.length; i++) {
      if (a[i] < b[i]) return true;
      if (a[i] > b[i]) return false;
    }
    return false;
  }

  function readWindow(lines, first, kb) {
    var cfg = kb.clean;
    var boundary = ci(cfg.boundary);
    var window = [lines[first].slice(0, cfg.max_line)];
    for (var j = first + 1; j < Math.min(lines.length, first + cfg.window_lines); j++) {
      if (boundary.exec(lines[j])) break;
      window.push(lines[j].slice(0, cfg.max_line));
    }
    var soft = join(window, false);
    var hard = join(window, true);
    var variants = hard[0] === soft[0] ? [soft] : [soft, hard];
    var lowered = variants.map(function (v) { return asciiLower(v[0]); });
    var best = null;
    kb.forms.forEach(function (form, order) {
      var ok = lowered.some(function (low) {
        return form.needles.every(function (n) { return low.indexOf(n) >= 0; });
      });
      if (!ok) return;
      var pattern = exact(form.regex);
      for (var v = 0; v < variants.length; v++) {
        var text = variants[v][0];
        var starts = variants[v][1];
        var m = pattern.exec(lowered[v]);
        if (!m) continue;
        var fields = {};
        var nfields = 0;
        var groups = m.groups || {};
        Object.keys(groups).forEach(function (k) {
          if (groups[k] !== undefined && groups[k] !== "") {
            var at = m.indices.groups[k];
            fields[k] = text.slice(at[0], at[1]);
            nfields++;
          }
        });
        var devices = [];
        (form.devices || []).forEach(function (g) { if (g in fields) devices.push(deviceOf(fields[g], kb)); });
        if (form.distinct && (devices.length < 2 || devices[0] === devices[1])) continue;  // as printed: cpu:0 against cpu is a failed check
        var k = lineOf(m.index, starts);
        var key = [form.fallback ? 1 : 0, k, m.index - starts[k], form.partial ? 1 : 0, -nfields, v, order];
        if (best === null || lessThan(key, best.key)) {
          best = { key: key, form: form, m: m, text: text, starts: starts, fields: fields, devices: devices };
        }
      }
    });
    if (best === null) return null;
    var start = best.m.index;
    var end = start + best.m[0].length;
    var text = best.text;
    var error = makeError(best.form, best.fields, best.devices, text.slice(Math.max(0, start - 200), start), text.slice(start, end), kb);
    var k = lineOf(start, best.starts);
    error.line = first + k + 1;
    error.lead = text.slice(best.starts[k], start);
    var last = first + lineOf(Math.max(start, end - 1), best.starts);
    return [error, last];
  }

  function makeError(form, fields, devices, before, message, kb) {
    var template = form.template;
    var families = (form.families && form.families.length) ? form.families : kb.templates[template].families;
    var ownFamilies = Boolean(form.families && form.families.length);
    if (form.multi_accel && devices.length >= 2 && kindOf(devices[0], kb) === "accelerator" &&
        kindOf(devices[1], kb) === "accelerator" && !sameDevice(devices[0], devices[1])) {
      template = form.multi_accel;
      families = kb.templates[template].families;
      ownFamilies = false;
    }
    var wrapper = fields.wrapper || "";
    var op = wrapper ? wrapper.replace(ci(kb.ops.strip), "") : "";
    var opBase = op ? op.replace(ci(kb.ops.overload), "") : "";
    var common = (form.common && form.common in fields) ? deviceOf(fields[form.common], kb) : "";
    var argdev = (form.argdev && form.argdev in fields) ? deviceOf(fields[form.argdev], kb) : "";
    var eraId = "";
    var versions = form.versions;
    var torchRange = form.torch;
    var rules = form.era_rules || [];
    for (var i = 0; i < rules.length; i++) {
      var value = fields[rules[i].field] || "";
      if (value && search(rules[i].regex, value)) {
        eraId = rules[i].id; versions = rules[i].versions; torchRange = rules[i].torch;
        break;
      }
    }
    var exc = search(kb.messages.exception, before);
    var exception = exc ? exc.groups.exc : "";
    var canonical = {};
    kb.messages.exceptions.forEach(function (e) { canonical[e.toLowerCase()] = e; });
    if (canonical[exception.toLowerCase()] !== undefined) exception = canonical[exception.toLowerCase()];
    return {
      template: template,
      form: form.id,
      era: eraId,
      versions: versions,
      torch_range: torchRange,
      exception: exception || kb.templates[template].exception,
      exception_printed: Boolean(exception),
      message: stripSpaces(message),
      wrapper: wrapper,
      op: op,
      op_base: opBase,
      argument: fields.argument || "",
      argnum: fields.argnum || "",
      devices: devices,
      common_device: common,
      argument_device: argdev,
      common_kind: common ? kindOf(common, kb) : "",
      argdev_kind: argdev ? kindOf(argdev, kb) : "",
      accelerators: String(distinctAccelerators(devices, kb)),
      fields: fields,
      families: families,
      own_families: ownFamilies,
      partial: Boolean(form.partial),
      fallback: Boolean(form.fallback),
      count: 1
    };
  }

  function deviceOf(printed, kb) {
    var value = stripSpaces(printed).toLowerCase();
    var map = kb.devices.map;
    for (var i = 0; i < map.length; i++) {
      var m = search(map[i].regex, value);
      if (m) return m.length > 1 ? replaceAll(map[i].device, "{1}", m[1] || "") : map[i].device;
    }
    return value;
  }

  function kindOf(device, kb) {
    var base = device.split(":")[0];
    if (kb.devices.not_accelerators.indexOf(base) >= 0) return base;
    return kb.devices.accelerators.indexOf(base) >= 0 ? "accelerator" : "unknown";
  }

  function partition(s) {
    var i = s.indexOf(":");
    return i < 0 ? [s, ""] : [s.slice(0, i), s.slice(i + 1)];
  }
  function distinctAccelerators(devices, kb) {
    var seen = [];
    devices.forEach(function (d) {
      if (kindOf(d, kb) === "accelerator" && !seen.some(function (s) { return sameDevice(d, s); })) seen.push(d);
    });
    return seen.length;
  }

  function sameDevice(a, b) {
    if (a === b) return true;
    var pa = partition(a);
    var pb = partition(b);
    return pa[0] === pb[0] && (!pa[1] || !pb[1]);
  }

  // ---------------------------------------------------------------------------------------
  // Frames (frames.py)
  function readFrames(region, lo, kb) {
    var cfg = kb.frames;
    var frames = [];
    var current = null;
    for (var offset = 0; offset < region.length; offset++) {
      var idx = lo + offset;
      var line = region[offset];
      var low = line.toLowerCase();
      var frame = null;
      if (cfg.hints.some(function (h) { return low.indexOf(h) >= 0; })) frame = frameOf(line, idx, kb);
      if (frame !== null) {
        frames.push(frame);
        current = frame;
        continue;
      }
      if (current === null || current.source) continue;
      var m = search(cfg.arrow, line) || search(cfg.labelled_source, line);
      if (m) {
        current.source = stripSpaces(m.groups.src);
        current.source_line = idx;
        continue;
      }
      var stripped = stripSpaces(line);
      if (current.mode === "next" && idx === current.line + 1) {
        if (stripped && !search(cfg.carets, line) && !search(kb.clean.boundary, line) && !search(cfg.exception_line, line)) {
          current.source = stripped;
          current.source_line = idx;
        }
      }
    }
    return frames;
  }

  function frameOf(line, idx, kb) {
    var cfg = kb.frames;
    for (var i = 0; i < cfg.patterns.length; i++) {
      var m = search(cfg.patterns[i].regex, line);
      if (!m) continue;
      var g = m.groups || {};
      var path = replaceAll(g.path || "", "\\", "/");
      if (!path && g.cell) path = "<cell " + g.cell + ">";
      var lib = "";
      var roots = Array.from(path.matchAll(ciGlobal(cfg.library_root)));
      if (roots.length) {
        var last = roots[roots.length - 1];
        lib = path.slice(last.index + last[0].length);
      }
      return {
        path: path,
        lib: lib,
        func: g.func || "",
        line: idx,
        // the line in the file (frames.py); 0 when not printed
        lineno: /^[0-9]+$/.test(g.line || "") ? parseInt(g.line, 10) : 0,
        source: "",
        source_line: -1,
        mode: cfg.patterns[i].source,
        torch: Boolean(lib && search(cfg.torch_internal, lib))
      };
    }
    return null;
  }

  // ---------------------------------------------------------------------------------------
  // Evidence (evidence.py)
  function collect(primary, frames, context, contextStart, kb) {
    var scores = {};
    var evidence = [];
    if (primary !== null) {
      // the catalogue order only breaks ties: background, not evidence (as in evidence.py)
      var prior = kb.scoring.prior;
      primary.families.forEach(function (family, rank) {
        if (rank < prior.length) scores[family] = (scores[family] || 0.0) + prior[rank];
      });
    }
    var template = primary ? primary.template : null;
    var failing = failingFrames(frames, primary, kb);
    kb.rules.forEach(function (rule) {
      // without an error line (a paste cut before its last line) any template may follow
      if (rule.templates && rule.templates.length && template !== null && rule.templates.indexOf(template) < 0) return;
      if (rule.where === "signature") {
        if (primary !== null && signatureMatches(rule, primary)) fire(scores, evidence, rule, signatureText(primary), primary.line, null, 1.0);
      } else if (rule.where === "source") {
        sourceRule(rule, frames, failing, scores, evidence, kb);
      } else if (rule.where === "frame") {
        frameRule(rule, frames, scores, evidence);
      } else if (rule.where === "text") {
        // a text rule with `when` reads the prose only beside an error of that shape
        if (rule.when && (primary === null || !signatureMatches(rule, primary))) return;
        textRule(rule, context, contextStart, scores, evidence);
      }
    });
    return [evidence, scores];
  }

  function failingFrames(frames, primary, kb) {
    var own = frames.filter(function (f) { return !f.torch && f.source; });
    if (primary !== null) {
      var before = own.filter(function (f) { return f.line < primary.line - 1; });
      if (before.length) own = before;
    }
    var n = kb.frames.failing_frames;
    return own.slice(Math.max(0, own.length - n));
  }

  function signatureText(error) {
    var parts = [];
    if (error.wrapper) parts.push(error.wrapper);
    if (error.argument) parts.push("argument " + error.argument);
    if (error.argument_device) parts.push("on " + error.argument_device);
    if (error.common_device) parts.push("(others on " + error.common_device + ")");
    if (!parts.length && error.devices.length) parts.push(error.devices.join(" and "));
    return parts.join(" ") || error.template;
  }

  function fieldOf(error, name) {
    var v = error[name];
    if (typeof v === "string") return v;
    return error.fields[name] || "";
  }

  function signatureMatches(rule, error) {
    var names = Object.keys(rule.when);
    for (var i = 0; i < names.length; i++) {
      var name = names[i];
      var pattern = rule.when[name];
      var value = fieldOf(error, name);
      if (name === "op") {
        if (!(search(pattern, value) || search(pattern, error.op_base))) return false;
      } else if (!search(pattern, value)) {
        return false;
      }
    }
    return true;
  }

  function sourceRule(rule, frames, failing, scores, evidence, kb) {
    var factor = kb.scoring.source_any_factor;
    var decay = kb.scoring.source_depth_decay;
    var candidates = failing.slice().reverse().map(function (f, depth) { return [f, Math.pow(decay, depth)]; });
    if (rule.scope === "any") {
      frames.slice().reverse().forEach(function (f) {
        if (!f.torch && f.source && failing.indexOf(f) < 0) candidates.push([f, factor]);
      });
    }
    for (var i = 0; i < candidates.length; i++) {
      var frame = candidates[i][0];
      if (rule.func && !search(rule.func, frame.func)) continue;
      if (!search(rule.regex, frame.source)) continue;
      if (rule.also && !search(rule.also, frame.source)) continue;
      if (rule.unless && search(rule.unless, frame.source)) continue;
      fire(scores, evidence, rule, frame.source, frame.source_line + 1, null, candidates[i][1], atOf(frame));
      return;
    }
  }

  function frameRule(rule, frames, scores, evidence) {
    for (var i = frames.length - 1; i >= 0; i--) {
      var frame = frames[i];
      if (!search(rule.regex, frame.path)) continue;
      if (rule.func && !search(rule.func, frame.func)) continue;
      if (rule.unless && search(rule.unless, frame.path)) continue;
      fire(scores, evidence, rule, frame.lib || frame.path, frame.line + 1, null, 1.0, atOf(frame));
      return;
    }
  }

  function textRule(rule, context, contextStart, scores, evidence) {
    var g = ciGlobal(rule.regex);
    g.lastIndex = 0;
    var m;
    while ((m = g.exec(context)) !== null) {
      if (m[0] === "") { g.lastIndex++; continue; }
      if (rule.unless && search(rule.unless, m[0])) continue;
      var line = contextStart + count(context, "\n", 0, m.index) + 1;
      fire(scores, evidence, rule, stripSpaces(m[0]), line, null, 1.0);
      return;
    }
  }

  // the user's file and line a frame names (evidence.py _at)
  function atOf(frame) { return frame.lineno > 0 ? (frame.lib || frame.path) + ":" + frame.lineno : ""; }

  function fire(scores, evidence, rule, match, line, why, factor, at) {
    var weights = {};
    Object.keys(rule.families).forEach(function (family) {
      var w = rule.families[family] * factor;
      weights[family] = w;
      scores[family] = (scores[family] || 0.0) + w;
    });
    var shown = match.length <= 160 ? match : match.slice(0, 157) + "...";
    evidence.push({
      rule: rule.id,
      where: rule.where,
      families: weights,
      match: shown,
      line: line,
      at: at || "",
      why: why !== null ? why : replaceAll(rule.why, "{match}", shown)
    });
  }

  // ---------------------------------------------------------------------------------------
  // Ranking and the result (engine.py)
  var SAME_CHECK = { T1: "T1", T2: "T1" };

  // engine.py _primary: the first error (the first of a named form, if any), unless a later
  // one is the same message in full
  function primaryOf(errors) {
    if (!errors.length) return null;
    var start = 0;
    for (var k = 0; k < errors.length; k++) {
      if (!errors[k].fallback) { start = k; break; }
    }
    var short = asciiLower(errors[start].message);
    var best = errors[start];
    for (var i = start + 1; i < errors.length; i++) {
      var e = errors[i];
      if (e.message.length > best.message.length && asciiLower(e.message).indexOf(short) >= 0) best = e;
    }
    return best;
  }

  function explainText(text, kb) {
    var lines = cleanLines(text, kb);
    var errors = findErrors(lines, kb);
    var primary = primaryOf(errors);
    var cfg = kb.clean;
    var n = lines.length;
    var lo;
    var hi;
    if (primary !== null) {
      var p = primary.line - 1;
      lo = Math.max(0, p - cfg.region_before);
      hi = Math.min(n, p + cfg.region_after + 1);
    } else {
      lo = Math.max(0, n - cfg.region_before - cfg.region_after);
      hi = n;
    }
    var region = lines.slice(lo, hi).map(function (line) { return collapse(line.slice(0, cfg.max_line)); });
    var frames = readFrames(region, lo, kb);
    var context = contextOf(region, lo, errors);
    var collected = collect(primary, frames, context, lo, kb);
    var evidence = collected[0];
    var scores = collected[1];
    var caseHits = caseFrames(region.join("\n"), lo, frames, kb);
    caseHits.forEach(function (hit) {
      var c = hit[0];
      var generic = search(kb.scoring.generic_fragment, hit[1]);
      var weight = generic ? kb.scoring.case_frame_generic_family : kb.scoring.case_frame_family;
      var share = c.frame_share[hit[1]];
      weight *= share === undefined ? 1.0 : share;
      if (weight <= 0) return;
      scores[c.family] = (scores[c.family] || 0.0) + weight;
      var fam = {};
      fam[c.family] = weight;
      evidence.push({
        rule: "case-library-frame",
        where: "frame",
        families: fam,
        match: hit[1],
        line: hit[2],
        at: "",
        "case": c.slug,
        why: "the traceback passes through `" + hit[1] + "`, where case " + c.id + " (" + c.title + ") happens"
      });
    });
    var printed = fingerprintMatches(pasteTokens(lines, lo, hi, errors), kb);
    fingerprintEvidence(printed, caseHits, scores, evidence, kb);
    var ranking = rankFamilies(scores, primary, evidence, kb);
    var prior = null;
    if (primary && !evidence.length && !primary.own_families) {
      var filled = priorFill(ranking, primary.template, kb);
      ranking = filled[0];
      prior = filled[1];
    }
    var cases = rankCases(primary, caseHits, printed, ranking, kb);
    var out = result(primary, errors, ranking, cases, evidence, frames, region, kb);
    out.prior = prior;
    return out;
  }

  // A thin paste (engine.py _prior_fill): rank 1 stays the catalogue's first family, ranks 2-3
  // go to the families that most often caused the template in the dev set's tune-half reports.
  function priorFill(ranking, template, kb) {
    var p = kb.reports_prior;
    var counts = p.templates[template] || {};
    if (!ranking.length || !Object.keys(counts).length) return [ranking, null];
    var order = ranking.map(function (r) { return r.family; });
    var ids = Object.keys(kb.families);
    var first = order[0];
    var pos = function (list, f) { return list.indexOf(f) >= 0 ? list.indexOf(f) : list.length; };
    var key = function (f) { return [-counts[f], pos(order, f), pos(ids, f)]; };
    var counted = Object.keys(counts).filter(function (f) { return counts[f] >= p.min_reports && f !== first; })
      .sort(function (a, b) { return lessThan(key(a), key(b)) ? -1 : (lessThan(key(b), key(a)) ? 1 : 0); });
    // slot by slot, a counted family displaces the catalogue's next only with margin x its reports
    var margin = p.margin === undefined ? 1 : p.margin;
    var often = [];
    var placed = [];
    var notPlaced = function (f) { return placed.indexOf(f) < 0; };
    for (var s = 0; s < p.slots; s++) {
      var nxt = order.slice(1).filter(notPlaced)[0];
      var cand = counted.filter(notPlaced)[0];
      if (cand === undefined) break;
      if (nxt !== undefined && cand !== nxt && counts[cand] < margin * (counts[nxt] || 0)) {
        placed.push(nxt);
      } else {
        placed.push(cand);
        often.push(cand);
      }
    }
    if (!often.length) return [ranking, null];
    var moved = placed.map(function (fid) {
      for (var i = 0; i < ranking.length; i++) if (ranking[i].family === fid) return ranking[i];
      var fam = kb.families[fid] || { title: fid, page: "families/" + fid.toLowerCase() + "/" };
      return { family: fid, title: fam.title, score: 0.0, page: fam.page, evidence: [] };
    });
    var rest = ranking.slice(1).filter(function (r) { return placed.indexOf(r.family) < 0; });
    var total = Object.keys(counts).reduce(function (acc, f) { return acc + counts[f]; }, 0);
    var prior = {
      template: template,
      reports: total,
      families: often.map(function (f) { return { family: f, reports: counts[f] }; })
    };
    return [[ranking[0]].concat(moved, rest), prior];
  }

  function contextOf(region, lo, errors) {
    var out = region.slice();
    errors.forEach(function (e) {
      e.spans.forEach(function (span) {
        for (var i = span[0]; i <= span[1]; i++) {
          if (i >= lo && i < lo + out.length) out[i - lo] = (i === span[0]) ? span[2] : "";
        }
      });
    });
    return out.join("\n");
  }

  function findPath(text, fragment) {
    var start = 0;
    for (;;) {
      var at = text.indexOf(fragment, start);
      if (at < 0) return -1;
      var before = at > 0 ? text[at - 1] : "\n";
      if ("/\"' \n[(".indexOf(before) >= 0) return at;
      start = at + 1;
    }
  }

  function caseFrames(regionText, lo, frames, kb) {
    var norm = replaceAll(regionText.toLowerCase(), "\\", "/");
    var paths = frames.map(function (f) { return ["/" + f.path.toLowerCase(), f.line + 1]; });
    var hits = [];
    kb.cases.forEach(function (c) {
      var found = null;
      var i;
      for (i = 0; i < c.library_frames.length && !found; i++) {
        for (var j = 0; j < paths.length; j++) {
          if (findPath(paths[j][0], c.library_frames[i]) >= 0) { found = [c.library_frames[i], paths[j][1]]; break; }
        }
      }
      if (!found) {
        for (i = 0; i < c.library_frames.length; i++) {
          var at = findPath(norm, c.library_frames[i]);
          if (at >= 0) { found = [c.library_frames[i], lo + count(norm, "\n", 0, at) + 1]; break; }
        }
      }
      if (found) hits.push([c, found[0], found[1]]);
    });
    return hits;
  }

  // A documented project's own code, recognised by its identifiers (explain/fingerprint.py).
  var TOKEN = /[A-Za-z_][A-Za-z0-9_]*/g;
  var PREFIX = /([A-Za-z_][A-Za-z0-9_]*)\W{0,4}$/;
  var HEAD_LINES = 60;
  var MIN_LENGTH = 5;

  function pasteTokens(lines, lo, hi, errors) {
    var blank = {};
    var prefixes = {};
    errors.forEach(function (e) {
      e.spans.forEach(function (span) {
        for (var i = span[0]; i <= span[1]; i++) blank[i] = i === span[0] ? span[2] : "";
        var m = PREFIX.exec(span[2]);
        if (m) prefixes[m[1].toLowerCase()] = true;
      });
    });
    var out = {};
    var rows = [];
    var i;
    for (i = 0; i < Math.min(HEAD_LINES, lines.length); i++) rows.push(i);
    for (i = Math.max(lo, HEAD_LINES); i < Math.min(hi, lines.length); i++) rows.push(i);
    rows.forEach(function (k) {
      var text = Object.prototype.hasOwnProperty.call(blank, k) ? blank[k] : lines[k];
      (text.match(TOKEN) || []).forEach(function (t) {
        if (t.length < MIN_LENGTH) return;
        var low = t.toLowerCase();
        if (!Object.prototype.hasOwnProperty.call(out, low)) out[low] = k + 1;
      });
    });
    var kept = {};
    Object.keys(prefixes).forEach(function (p) { if (Object.prototype.hasOwnProperty.call(out, p)) kept[p] = true; });
    return [out, kept];
  }

  function fingerprintMatches(pair, kb) {
    var tokens = pair[0];
    var prefixes = pair[1];
    var least = kb.scoring.fingerprint_min;
    var out = [];
    kb.cases.forEach(function (c) {
      var found = Object.keys(c.fingerprint).filter(function (n) { return Object.prototype.hasOwnProperty.call(tokens, n); }).sort();
      if (!found.length || (found.length < 2 && !prefixes[found[0]])) return;
      var score = 0.0;
      found.forEach(function (n) { score += c.fingerprint[n] * (prefixes[n] ? 2 : 1); });
      if (score >= least) {
        var line = Math.min.apply(null, found.map(function (n) { return tokens[n]; }));
        out.push([c, found, score, line]);
      }
    });
    // stable, strongest first (as Python's sort)
    return out.map(function (m, i) { return [m, i]; })
      .sort(function (a, b) { return (b[0][2] - a[0][2]) || (a[1] - b[1]); })
      .map(function (p) { return p[0]; });
  }

  function fingerprintEvidence(printed, caseHits, scores, evidence, kb) {
    var s = kb.scoring;
    var framed = {};
    caseHits.forEach(function (hit) { if (!search(s.generic_fragment, hit[1])) framed[hit[0].slug] = true; });
    printed.forEach(function (m) {
      var c = m[0];
      if (framed[c.slug]) return;
      var weight = s.case_fingerprint_family * Math.min(m[2], s.fingerprint_cap);
      scores[c.family] = (scores[c.family] || 0.0) + weight;
      var fam = {};
      fam[c.family] = weight;
      var names = m[1].slice(0, 4).map(function (n) { return "`" + n + "`"; }).join(", ");
      evidence.push({
        rule: "case-fingerprint",
        where: "text",
        families: fam,
        match: m[1].join(", "),
        line: m[3],
        at: "",
        "case": c.slug,
        why: "the paste names " + names + ", identifiers of the code of case " + c.id + " (" + c.title + ")"
      });
    });
  }

  function rankFamilies(scores, primary, evidence, kb) {
    var priorOrder = primary ? primary.families : [];
    var ids = Object.keys(kb.families);
    function key(fid) {
      var rank = priorOrder.indexOf(fid) >= 0 ? priorOrder.indexOf(fid) : priorOrder.length;
      var pos = ids.indexOf(fid) >= 0 ? ids.indexOf(fid) : ids.length;
      return [-scores[fid], rank, pos];
    }
    var ranked = Object.keys(scores).filter(function (f) { return scores[f] > 0; })
      .sort(function (a, b) { return lessThan(key(a), key(b)) ? -1 : (lessThan(key(b), key(a)) ? 1 : 0); });
    assign(evidence, ranked);
    return ranked.map(function (fid) {
        var fam = kb.families[fid] || { title: fid, page: "families/" + fid.toLowerCase() + "/" };
        return {
          family: fid,
          title: fam.title,
          score: scores[fid],
          page: fam.page,
          evidence: evidence.filter(function (e) { return e.family === fid; }).map(function (e) { return e.rule; })
        };
      });
  }

  // Each piece of evidence supports one family: the one it weighs most (ties: the better ranked).
  function assign(evidence, order) {
    evidence.forEach(function (e) {
      var best = null;
      Object.keys(e.families).forEach(function (fid) {
        var w = e.families[fid];
        var rank = order.indexOf(fid) >= 0 ? order.indexOf(fid) : order.length;
        if (w > 0 && (best === null || lessThan([-w, rank], best[0]))) best = [[-w, rank], fid];
      });
      e.family = best ? best[1] : "";
    });
  }

  function fmt(x) { return String(x); }

  function rankCases(primary, caseHits, printed, ranking, kb) {
    var s = kb.scoring;
    var familyScores = {};
    ranking.forEach(function (r) { familyScores[r.family] = r.score; });
    var best = ranking.length ? ranking[0].score : 0.0;
    var framed = {};
    caseHits.forEach(function (hit) { framed[hit[0].slug] = hit[1]; });
    var named = {};
    printed.forEach(function (m) { named[m[0].slug] = [m[1], m[2]]; });
    // A template that few cases print (T7, T10, ...) points at them by itself (as in engine.py).
    var template = primary ? (SAME_CHECK[primary.template] || primary.template) : null;
    var printing = kb.cases.filter(function (c) {
      return c.signatures.some(function (sig) { return (SAME_CHECK[sig.template] || sig.template) === template; });
    }).length;
    var rare = primary !== null && primary !== undefined && printing <= Math.max(1.0, s.case_rare_share * kb.cases.length);
    var out = [];
    kb.cases.forEach(function (c, order) {
      var why = [];
      var score = 0.0;
      var isFramed = Object.prototype.hasOwnProperty.call(framed, c.slug);
      if (isFramed) {
        score += search(s.generic_fragment, framed[c.slug]) ? s.case_frame_generic : s.case_frame;
        why.push("traceback passes through " + framed[c.slug]);
      }
      var isNamed = Object.prototype.hasOwnProperty.call(named, c.slug);
      if (isNamed) {
        score += s.case_fingerprint * Math.min(named[c.slug][1], s.fingerprint_cap);
        why.push("the paste names its code: " + named[c.slug][0].slice(0, 4).join(", "));
      }
      var matched = primary ? signatureScore(primary, c, s) : [0.0, []];
      var sig = matched[0];
      if (sig > 0) {
        score += sig;
        why.push("its documented error has the same " + matched[1].join(", ") + " (score " + fmt(sig) + ")");
      }
      if (!isFramed && !isNamed && sig < s.case_min_signature && !(rare && sig > 0)) return;
      if (best > 0) score += s.family_share * (familyScores[c.family] || 0.0) / best;
      out.push({ slug: c.slug, id: c.id, title: c.title, family: c.family, score: score, page: c.page, why: why, _order: order });
    });
    out.sort(function (a, b) { return (b.score - a.score) || (a._order - b._order); });
    out.forEach(function (c) { delete c._order; });
    return out;
  }

  // [score, what matched] as in engine.py's _signature_score
  function signatureScore(primary, c, s) {
    var best = 0.0;
    var bestSame = [];
    var template = SAME_CHECK[primary.template] || primary.template;
    var ops = [primary.op.toLowerCase(), primary.op_base.toLowerCase()].filter(function (x) { return x; });
    c.signatures.forEach(function (sig) {
      if ((SAME_CHECK[sig.template] || sig.template) !== template) return;
      var score = s.case_template;
      var same = ["template " + (primary.template === sig.template ? sig.template : primary.template + "/" + sig.template)];
      if (ops.length && (ops.indexOf(sig.op.toLowerCase()) >= 0 || ops.indexOf(sig.op_base.toLowerCase()) >= 0)) {
        score += s.case_op;
        same.push("op " + (sig.op_base || sig.op));
      }
      if (primary.argument && primary.argument.toLowerCase() === sig.argument.toLowerCase()) {
        score += s.case_argument;
        same.push("argument " + sig.argument);
      }
      if (primary.common_kind && primary.common_kind === sig.common_kind && primary.argdev_kind === sig.argdev_kind) {
        score += s.case_orientation;
        same.push("device order");
      }
      if (score > best) {
        best = score;
        bestSame = same;
      }
    });
    return [best, bestSame];
  }

  function torchVersion(region, kb) {
    var text = region.join("\n");
    for (var i = 0; i < kb.versions.length; i++) {
      var m = search(kb.versions[i], text);
      if (m) return m.groups.v;
    }
    return "";
  }

  function publicError(e, kb) {
    var out = {};
    ["template", "form", "versions", "torch_range", "exception", "exception_printed", "message", "wrapper", "op",
      "op_base", "argument", "argnum", "devices", "common_device", "argument_device", "line", "count"].forEach(function (k) { out[k] = e[k]; });
    out.title = kb.templates[e.template] ? kb.templates[e.template].title : "";  // an id never goes out without its title
    return out;
  }

  function result(primary, errors, ranking, cases, evidence, frames, region, kb) {
    var maxWeight = function (e) {
      var vals = Object.keys(e.families).map(function (f) { return e.families[f]; });
      return vals.length ? Math.max.apply(null, vals) : 0.0;
    };
    var ordered = evidence.map(function (e, i) { return [i, e]; }).sort(function (a, b) {
      return (maxWeight(b[1]) - maxWeight(a[1])) || (a[0] - b[0]);
    }).map(function (x) { return x[1]; });
    var template = primary ? kb.templates[primary.template] : null;
    var pages = cases.slice(0, 3).map(function (c) { return { kind: "case", id: c.id, title: c.title, url: c.page }; });
    ranking.slice(0, 3).forEach(function (r) { pages.push({ kind: "family", id: r.family, title: r.title, url: r.page }); });
    if (template) pages.push({ kind: "template", id: template.id, title: template.title, url: template.page });
    var top = ranking.length ? ranking[0].family : "";
    var failing = frames.filter(function (f) { return !f.torch && f.source; });
    // honest when thin (engine.py): the next step is what tells the families apart
    var thin = ordered.length === 0;
    var nxt;
    if (!primary) nxt = frames.length ? kb.clean.no_error_next : "";
    else if (thin) nxt = template.decide;
    else nxt = kb.next_steps[top] !== undefined ? kb.next_steps[top] : template.next_step;
    var nFail = kb.frames.failing_frames;
    var libs = {};
    frames.forEach(function (f) { if (f.lib) libs[f.lib.split("/")[0]] = true; });
    var p = primary;
    return {
      template: p ? p.template : null,
      title: template ? template.title : "",
      meaning: template ? template.meaning : "",
      families: ranking.map(function (r) { return r.family; }),
      cases: cases.map(function (c) { return c.slug; }),
      evidence: ordered,
      exception: p ? p.exception : "",
      message: p ? p.message : "",
      op: p ? p.op : "",
      op_base: p ? p.op_base : "",
      wrapper: p ? p.wrapper : "",
      argument: p ? p.argument : "",
      devices: p ? p.devices : [],
      common_device: p ? p.common_device : "",
      argument_device: p ? p.argument_device : "",
      signature: p ? signatureText(p) : "",
      form: p ? p.form : "",
      era: p ? p.versions : "",
      torch_range: p ? p.torch_range : "",
      torch_version: torchVersion(region, kb),
      line: p ? p.line : null,
      errors: errors.map(function (e) { return publicError(e, kb); }),
      ranking: ranking,
      case_ranking: cases,
      pages: pages,
      thin: thin,
      next: nxt,
      next_step: kb.next_steps[top] !== undefined ? kb.next_steps[top] : (template ? template.next_step : ""),
      template_next_step: template ? template.next_step : "",
      traceback: {
        frames: frames.length,
        failing: failing.slice(Math.max(0, failing.length - nFail)).map(function (f) { return f.source; }),
        libraries: Object.keys(libs).sort()
      }
    };
  }

  // report.py thin_text, word for word (the page has no code to read: it says how to give it)
  function thinText(res) {
    var title = res.title ? " (" + res.title + ")" : "";
    var head = "Nothing in the paste beyond the " + res.template + title + " message points to one of them; ";
    var titles = {};
    (res.ranking || []).forEach(function (r) { titles[r.family] = r.title; });
    var prior = res.prior;
    var code = " explain decides it from your code: run it where the error happened (it reads the files " +
      "the traceback names), or give it your checkout with --source DIR.";
    if (!prior) return head + "they are listed from the cause this message most often has. The next step below decides." + code;
    var often = prior.families.map(function (f) {
      return (f.family + " " + (titles[f.family] || "") + " (" + f.reports + " of " + prior.reports + ")").split("  ").join(" ");
    }).join(", ");
    return head + "the first is the cause this message's wording points to; most often, in real " + prior.template +
      " reports: " + often + ". That is a frequency, not evidence: the next step below decides." + code;
  }

  function explain(text, kb) {
    checkText(text);
    return explainText(text, kb);
  }

  // ---------------------------------------------------------------------------------------
  // The page and the home-page box. Markup: <div data-samedevice-explain="page"></div> (the
  // "Paste your error" page) or ="box" (a compact form that shows the result inline and links
  // to the page with #q=). Everything the user pasted is written with textContent only.
  // The paste only ever goes into the URL's fragment (#q=): browsers never send a fragment to
  // a server, neither in a request nor in the Referer of the next click, and the page sets its
  // referrer policy to no-referrer on top. A query string (?q=) would be sent with both.
  var MAX_LINK = 4000; // longer pastes are not put into the address bar

  // What the page reads from a link: far above what it writes (MAX_LINK, percent-encoded at most
  // three bytes a character), far below what would hold the page up. A longer link is not read:
  // its text belongs in the box, where the reader sees what is run.
  var MAX_LINK_READ = 100000;

  function queryFromHash(hash) {
    if (!hash || hash.slice(0, 3) !== "#q=") return null;
    if (hash.length - 3 > MAX_LINK_READ) return new InputError(
      "this link holds " + (hash.length - 3) + " characters; a link is read up to " + MAX_LINK_READ +
      ": paste the error or traceback into the box instead");
    try { return decodeURIComponent(hash.slice(3)); } catch (e) { return null; }
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = text;
    return node;
  }

  function scriptBase() {
    var s = document.currentScript;
    if (!s) {
      var all = document.querySelectorAll("script[src]");
      for (var i = all.length - 1; i >= 0; i--) {
        if (/explain\.js(\?|$)/.test(all[i].src)) { s = all[i]; break; }
      }
    }
    return s ? s.src.replace(/explain\.js(\?.*)?$/, "") : "javascripts/";
  }
  var BASE = typeof document !== "undefined" ? scriptBase() : "";

  // The site root, from this script's URL (<site>/javascripts/explain.js).
  function siteRoot() { return BASE.replace(/javascripts\/$/, ""); }

  var dataPromise = null;
  function loadData() {
    if (root.SAMEDEVICE_EXPLAIN_DATA) return Promise.resolve(root.SAMEDEVICE_EXPLAIN_DATA);
    if (!dataPromise) {
      // a <script> (not fetch) so the page also works from file:// (offline copies)
      dataPromise = new Promise(function (resolve, reject) {
        var s = document.createElement("script");
        s.src = BASE + "explain-data.js";
        s.onload = function () {
          if (root.SAMEDEVICE_EXPLAIN_DATA) resolve(root.SAMEDEVICE_EXPLAIN_DATA);
          else reject(new Error("explain-data.js did not define the data"));
        };
        s.onerror = function () { reject(new Error("could not load " + s.src)); };
        document.head.appendChild(s);
      });
    }
    return dataPromise;
  }

  // Prose from the data marks code with backticks: show those spans as <code>, still as text.
  function prose(tag, cls, text) {
    var node = el(tag, cls);
    String(text).split("`").forEach(function (part, i) {
      if (part) node.appendChild(i % 2 ? el("code", null, part) : document.createTextNode(part));
    });
    return node;
  }

  function link(url, text) {
    var a = prose("a", null, text);  // case titles carry `code` spans: shown as code
    a.href = siteRoot() + url;
    a.referrerPolicy = "no-referrer";
    return a;
  }

  function render(out, res, compact) {
    out.textContent = "";
    if (res.template === null && !res.families.length && !res.cases.length) {
      out.appendChild(el("p", "sd-explain__none", "No PyTorch device error recognised. Paste the whole error, including the last line of the traceback."));
      return;
    }
    if (res.template === null && res.next) out.appendChild(prose("p", "sd-explain__next", res.next));
    var head = el("div", "sd-explain__head");
    if (res.template) {
      var h = el("p", "sd-explain__template");
      h.appendChild(link("messages/" + res.template.toLowerCase() + "/", res.template));
      h.appendChild(document.createTextNode(": " + res.title));
      head.appendChild(h);
      var facts = [];
      if (res.op) facts.push("op " + (res.op_base || res.op));
      if (res.argument) facts.push("argument " + res.argument + (res.argument_device ? " on " + res.argument_device : ""));
      if (res.common_device) facts.push("other tensors on " + res.common_device);
      else if (res.devices.length) facts.push("devices " + res.devices.join(", "));
      if (res.era) facts.push("printed by PyTorch " + res.era);
      if (res.torch_version) facts.push("torch " + res.torch_version + " in the paste");
      if (facts.length) head.appendChild(el("p", "sd-explain__facts", facts.join(" · ")));
      if (!compact) head.appendChild(prose("p", "sd-explain__meaning", res.meaning));
    } else {
      head.appendChild(el("p", "sd-explain__template", "No device error message found; the traceback still points to:"));
    }
    out.appendChild(head);

    if (res.thin) {
      out.appendChild(el("p", "sd-explain__label", "Possible causes (the message alone cannot tell these apart)"));
      out.appendChild(el("p", "sd-explain__thin", thinText(res)));
    } else {
      out.appendChild(el("p", "sd-explain__label", "Likely causes, best first"));
    }
    var ol = el("ol", "sd-explain__causes");
    res.ranking.slice(0, compact ? 2 : 3).forEach(function (r) {
      var li = el("li");
      var title = el("strong");
      title.appendChild(link(r.page, r.family + " " + r.title));
      li.appendChild(title);
      var ul = el("ul");
      var shown = 0;
      res.evidence.forEach(function (e) {
        if (shown >= (compact ? 1 : 3) || e.family !== r.family) return;
        ul.appendChild(prose("li", null, (e.at ? e.at + ": " : (e.line ? "paste line " + e.line + ": " : "")) + e.why));
        shown++;
      });
      if (!shown && !res.thin) ul.appendChild(el("li", null, "nothing in the paste points here; listed because the message is often produced by this family"));
      if (shown) li.appendChild(ul);
      ol.appendChild(li);
    });
    out.appendChild(ol);

    if (res.case_ranking.length) {
      out.appendChild(el("p", "sd-explain__label", "Matching cases"));
      var cl = el("ul", "sd-explain__cases");
      res.case_ranking.slice(0, 5).forEach(function (c) {
        var li = el("li");
        li.appendChild(link(c.page, c.id + " " + c.title));
        li.appendChild(el("span", "sd-explain__why", " (" + c.why.join("; ") + ")"));
        cl.appendChild(li);
      });
      out.appendChild(cl);
    }
    if (!compact) {
      out.appendChild(el("p", "sd-explain__label", "Next step"));
      out.appendChild(prose("p", "sd-explain__next", res.next));
      if (res.errors.length > 1) {
        out.appendChild(el("p", "sd-explain__label", "Other device errors in this paste"));
        var ul2 = el("ul");
        res.errors.slice(1).forEach(function (e) { ul2.appendChild(el("li", null, "line " + e.line + ": " + e.template + " " + e.message)); });
        out.appendChild(ul2);
      }
    }
  }

  // A few rules, added once, so the page and the box need no stylesheet entry of their own;
  // colours come from Material's variables (light and dark schemes).
  var STYLE = [
    ".sd-explain__input{width:100%;box-sizing:border-box;font-family:var(--md-code-font-family,monospace);",
    "font-size:.75rem;padding:.5em;border:1px solid var(--md-default-fg-color--lighter,#ccc);border-radius:.2em;",
    "background:var(--md-code-bg-color,#f5f5f5);color:var(--md-code-fg-color,inherit)}",
    ".sd-explain__go{margin:.5em 0}",
    ".sd-explain__label{font-weight:700;margin:.8em 0 .2em}",
    ".sd-explain__template{font-size:1.05em;font-weight:700}",
    ".sd-explain__facts,.sd-explain__why{color:var(--md-default-fg-color--light,#666)}",
    ".sd-explain__error{color:var(--md-typeset-del-color,#c00)}",
    ".sd-explain--box{padding:.6em .8em;border:1px solid var(--md-default-fg-color--lightest,#ddd);border-radius:.2em}",
    ".sd-search-paste{padding:.6em 1.2em;border-bottom:1px solid var(--md-default-fg-color--lightest,#ddd);font-size:.7rem}",
    ".sd-search-paste p{margin:.2em 0}.sd-search-paste__head a{font-weight:700}"
  ].join("");
  // A constructed style sheet, not a <style> element: the site's Content-Security-Policy runs
  // only the inline styles it hashed at build time, and CSSOM sheets are outside its reach.
  var styled = false;
  function injectStyle() {
    if (styled) return;
    styled = true;
    if (typeof CSSStyleSheet === "function" && "adoptedStyleSheets" in document) {
      var sheet = new CSSStyleSheet();
      sheet.replaceSync(STYLE);
      document.adoptedStyleSheets = document.adoptedStyleSheets.concat([sheet]);
      return;
    }
    var style = el("style", null, STYLE); // an older browser: no CSSOM sheets (nor, there, a strict CSP)
    document.head.appendChild(style);
  }

  function mount(container) {
    if (container.getAttribute("data-samedevice-mounted")) return;
    injectStyle();
    container.setAttribute("data-samedevice-mounted", "1");
    var compact = container.getAttribute("data-samedevice-explain") === "box";
    if (compact) container.classList.add("sd-explain--box");
    var form = el("form", "sd-explain__form");
    var label = el("label", "sd-explain__label", compact ? "Paste a PyTorch device error" : "Paste the error or the whole traceback");
    var area = el("textarea", "sd-explain__input");
    area.rows = compact ? 4 : 14;
    area.spellcheck = false;
    area.setAttribute("autocomplete", "off");
    area.setAttribute("aria-label", "Error or traceback");
    var id = "sd-explain-input-" + Math.random().toString(36).slice(2);
    area.id = id;
    label.htmlFor = id;
    var button = el("button", "md-button md-button--primary sd-explain__go", "Explain");
    button.type = "submit";
    var out = el("div", "sd-explain__result");
    out.setAttribute("aria-live", "polite");
    form.appendChild(label);
    form.appendChild(area);
    form.appendChild(button);
    container.textContent = "";
    container.appendChild(form);
    container.appendChild(out);

    function run() {
      var text = area.value;
      return loadData().then(function (kb) {
        var res;
        try {
          res = explain(text, kb);
        } catch (e) {
          out.textContent = "";
          out.appendChild(el("p", "sd-explain__error", e instanceof InputError ? e.message : "explain failed: " + e));
          return null;
        }
        render(out, res, compact);
        if (compact && text.length <= MAX_LINK) {
          var more = el("p", "sd-explain__more");
          more.appendChild(link("paste/#q=" + encodeURIComponent(text), "Open the full explanation"));
          out.appendChild(more);
        }
        if (!compact && text.length <= MAX_LINK && root.history && root.history.replaceState) {
          var url = new URL(root.location.href);
          url.searchParams.delete("q");
          url.hash = "q=" + encodeURIComponent(text);
          root.history.replaceState(root.history.state, "", url.toString());
        }
        return res;
      }, function (err) {
        out.textContent = "";
        out.appendChild(el("p", "sd-explain__error", "The explain data could not be loaded (" + err.message + ")."));
      });
    }
    form.addEventListener("submit", function (ev) { ev.preventDefault(); run(); });

    // #q= deep link (and old ?q= links, which the page's inline script stashes and rewrites to
    // #q= before Material's search reads the parameter or anything is requested with it).
    if (!compact) {
      var q = root.SAMEDEVICE_EXPLAIN_QUERY;
      if (typeof q === "string" && q.length > MAX_LINK_READ) q = queryFromHash("#q=" + q); // the same bound
      if (q === undefined || q === null) q = queryFromHash(root.location.hash);
      if (q instanceof InputError) {
        out.appendChild(el("p", "sd-explain__error", q.message));
      } else if (q) {
        area.value = q;
        run();
      }
    }
  }

  // Material's search box ranks pages by the words they share with the query, which for a
  // pasted error are the words every case shares. When the query holds a device error, the
  // "Paste your error" page's answer comes first, above the word matches: the template, the
  // case that matches best, and a link to the full explanation.
  var SEARCH_MIN = 20; // shorter queries are words, not pastes
  function mountSearch() {
    var input = document.querySelector("input[data-md-component='search-query']");
    var result = document.querySelector(".md-search-result");
    if (!input || !result || input.getAttribute("data-samedevice-search")) return;
    input.setAttribute("data-samedevice-search", "1");
    injectStyle();
    var box = el("div", "sd-search-paste");
    box.hidden = true;
    box.setAttribute("aria-live", "polite");
    result.insertBefore(box, result.firstChild);  // outside the list Material re-renders
    var timer = null;

    function update() {
      var text = input.value;
      if (text.length < SEARCH_MIN || text.length > MAX_LINK) { box.hidden = true; return; }
      loadData().then(function (kb) {
        if (input.value !== text) return;  // the user typed on
        var res;
        try { res = explain(text, kb); } catch (e) { box.hidden = true; return; }
        if (res.template === null) { box.hidden = true; return; }
        box.textContent = "";
        var head = el("p", "sd-search-paste__head");
        head.appendChild(link("paste/#q=" + encodeURIComponent(text), "Explain this error"));
        head.appendChild(document.createTextNode(" \u2014 " + res.template + ": " + res.title));
        box.appendChild(head);
        if (res.case_ranking.length) {
          var c = res.case_ranking[0];
          var p = el("p", "sd-search-paste__case", "Closest case: ");
          p.appendChild(link(c.page, c.id + " " + c.title));
          box.appendChild(p);
        } else if (res.ranking.length) {
          var r = res.ranking[0];
          var q = el("p", "sd-search-paste__case", "Most likely cause: ");
          q.appendChild(link(r.page, r.family + " " + r.title));
          box.appendChild(q);
        }
        box.hidden = false;
      }, function () { box.hidden = true; });
    }
    input.addEventListener("input", function () {
      clearTimeout(timer);
      timer = setTimeout(update, 120);
    });
    if (input.value) update();
  }

  function mountAll() {
    var nodes = document.querySelectorAll("[data-samedevice-explain]");
    for (var i = 0; i < nodes.length; i++) mount(nodes[i]);
    mountSearch();
  }

  var api = {
    explain: explain,
    explainText: explainText,
    thinText: thinText,
    checkText: checkText,
    cleanLines: cleanLines,
    findErrors: findErrors,
    InputError: InputError,
    mountAll: mountAll
  };
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    root.SamedeviceExplain = api;
    // Material's instant navigation swaps pages without reloading scripts: follow document$.
    if (root.document$ && typeof root.document$.subscribe === "function") {
      root.document$.subscribe(function () { mountAll(); });
    } else if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", mountAll);
    } else {
      mountAll();
    }
  }
})(typeof window !== "undefined" ? window : globalThis);
