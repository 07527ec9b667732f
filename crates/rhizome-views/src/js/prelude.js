// The globals CouchDB's JavaScript query server gives design-document
// functions (share/server/util.js, views.js), and the entry points Rust
// calls. Nothing here reaches files, the network or other databases.
var __fns = [];
var __emits = null;
var __logs = [];

function emit(key, value) {
  if (__emits === null) throw new Error("emit() is only for map functions");
  __emits.push([key === undefined ? null : key, value === undefined ? null : value]);
}
function log(message) {
  __logs.push(typeof message === "string" ? message : JSON.stringify(message));
}
function sum(values) {
  var total = 0;
  for (var i = 0; i < values.length; i++) total += values[i];
  return total;
}
function isArray(value) {
  return Array.isArray(value);
}
function toJSON(value) {
  return JSON.stringify(value);
}
function __seal(value) {
  if (value !== null && typeof value === "object" && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (var k in value) __seal(value[k]);
  }
  return value;
}

// CommonJS modules kept in the design document (CouchDB's `require`): a
// path names a string member, `./` and `../` are relative to the module
// that requires.
function __requireIn(ddoc, cache, dir) {
  return function require(name) {
    if (typeof name !== "string") throw ["error", "invalid_require_path", "require() takes a string"];
    var parts = name.split("/");
    var path = parts[0] === "." || parts[0] === ".." ? dir.concat(parts) : parts;
    var resolved = [];
    for (var i = 0; i < path.length; i++) {
      if (path[i] === "." || path[i] === "") continue;
      if (path[i] === "..") {
        if (resolved.length === 0) throw ["error", "invalid_require_path", "Object has no parent " + JSON.stringify(name)];
        resolved.pop();
      } else resolved.push(path[i]);
    }
    var key = resolved.join("/");
    if (Object.prototype.hasOwnProperty.call(cache, key)) return cache[key].exports;
    var source = ddoc;
    for (var j = 0; j < resolved.length; j++) {
      if (source === null || typeof source !== "object" || !Object.prototype.hasOwnProperty.call(source, resolved[j]))
        throw ["error", "invalid_require_path", "Object has no property \"" + resolved[j] + "\". " + JSON.stringify(name)];
      source = source[resolved[j]];
    }
    if (typeof source !== "string") throw ["error", "invalid_require_path", "Module " + JSON.stringify(name) + " is not a string"];
    var module = { id: key, exports: {} };
    cache[key] = module;
    var body = (0, eval)("(function (module, exports, require) {" + source + "\n})");
    body(module, module.exports, __requireIn(ddoc, cache, resolved.slice(0, -1)));
    return module.exports;
  };
}

// Compiles `source` (a function expression) with `require` over `ddoc`'s
// modules in scope; returns its index or throws.
function __compile(source, ddoc) {
  var require = __requireIn(ddoc, {}, []);
  var fn = (function (require) {
    try {
      return eval("(" + source + "\n)");
    } catch (e) {
      // CouchDB's QuickJS takes a top-level `function (...) {...}` as an
      // expression statement (its "SpiderMonkey 1.8.5 mode"), so a function
      // followed by `;` compiles there: accept the same.
      var trimmed = source.replace(/[\s;]+$/, "");
      if (!(e instanceof SyntaxError) || trimmed === source) throw e;
      return eval("(" + trimmed + "\n)");
    }
  })(require);
  if (typeof fn !== "function") throw new Error("Expression does not eval to a function. (" + source + ")");
  __fns.push(fn);
  return __fns.length - 1;
}

// Runs map functions `indexes` on one document: for each, the emitted
// [key, value] pairs, or {"error": message} when it threw.
function __map(indexes, doc) {
  __seal(doc);
  var out = [];
  for (var i = 0; i < indexes.length; i++) {
    __emits = [];
    try {
      __fns[indexes[i]](doc);
      out.push(__emits);
    } catch (e) {
      out.push({ error: __describe(e) });
    }
  }
  __emits = null;
  return out;
}

function __call(index, args) {
  return __fns[index].apply(null, args);
}

function __describe(e) {
  if (e && e.message !== undefined) return String(e.message);
  return JSON.stringify(e);
}
