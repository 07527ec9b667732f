//! Map functions of a few common shapes run without JavaScript: parsed
//! from their source, evaluated on the document as `serde_json` reads it,
//! with JavaScript's semantics for everything they accept.
//!
//! Accepted: `function [name](param) { statements }` whose statements are
//! `emit(a, b);` with 0 to 2 arguments, `if (e) statement [else
//! statement]`, blocks and empty statements; expressions are the
//! parameter's members (`doc.a.b`, `doc["a"]`, `doc[0]`), literals (`null`,
//! `true`, `false`, `undefined`, decimal integers up to 2^53, strings
//! without escapes), array literals, `!`, `typeof`, `&&`, `||`,
//! `=== !== == !=`, `< <= > >=` and parentheses. Anything else is left to
//! QuickJS ([`NativeMap::parse`] gives `None`).
//!
//! Where exact semantics would take more than this evaluator has, a
//! document is left to QuickJS too ([`NativeMap::map`] gives `None`): a
//! member of `undefined` or `null` (a `TypeError`), of anything but an
//! object, or one that an object inherits (`doc.constructor`); a number
//! that is not an integer within 2^53, or an object key that JavaScript
//! orders first (an array index), in what is compared or emitted; a loose
//! or relational comparison of values of different types. The map runs in
//! QuickJS only when every map function of the design document is native
//! (a function that runs can change globals another one sees), so the
//! rows are QuickJS's.

use serde_json::Value;

/// A map function of an accepted shape.
#[derive(Debug)]
pub struct NativeMap {
    body: Vec<Stmt>,
}

#[derive(Debug)]
enum Stmt {
    Emit(Vec<Expr>),
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    Block(Vec<Stmt>),
}

#[derive(Debug)]
enum Expr {
    /// The parameter.
    Param,
    Member(Box<Expr>, String),
    Literal(Value),
    Undefined,
    Array(Vec<Expr>),
    Not(Box<Expr>),
    TypeOf(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Compare(Box<Expr>, Op, Box<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    StrictEq,
    StrictNe,
    LooseEq,
    LooseNe,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Int(i64),
    Str(String),
    Punct(&'static str),
}

const PUNCTS: [&str; 20] = ["===", "!==", "==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", "{", "}", "[", "]", ",", ";", "."];

/// 2^53: integers up to it are exact as JavaScript numbers.
const SAFE_INTEGER: i64 = 1 << 53;

fn tokens(source: &str) -> Option<Vec<Token>> {
    let b = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let end = source[i + 2..].find("*/")?;
            i += end + 4;
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'$' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                i += 1;
            }
            out.push(Token::Ident(source[start..i].to_owned()));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            // No fractions, exponents, hex, legacy octal (`010`) or
            // numbers running into names.
            if i < b.len() && (b[i] == b'.' || b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$') {
                return None;
            }
            let digits = &source[start..i];
            if digits.len() > 1 && digits.starts_with('0') {
                return None;
            }
            let n: i64 = digits.parse().ok().filter(|n| *n <= SAFE_INTEGER)?;
            out.push(Token::Int(n));
        } else if c == b'"' || c == b'\'' {
            let end = source[i + 1..].find(c as char)? + i + 1;
            let text = &source[i + 1..end];
            if text.contains(['\\', '\n', '\r', '\u{2028}', '\u{2029}']) {
                return None;
            }
            out.push(Token::Str(text.to_owned()));
            i = end + 1;
        } else {
            let p = PUNCTS.iter().find(|p| b[i..].starts_with(p.as_bytes()))?;
            out.push(Token::Punct(p));
            i += p.len();
        }
    }
    Some(out)
}

/// Words that are not names of the parameter's members in expressions.
const RESERVED: [&str; 10] = ["function", "if", "else", "typeof", "null", "true", "false", "undefined", "emit", "return"];

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    param: String,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, p: &str) -> bool {
        if matches!(self.peek(), Some(Token::Punct(q)) if *q == p) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, p: &str) -> Option<()> {
        self.eat(p).then_some(())
    }

    fn ident(&mut self) -> Option<String> {
        match self.peek() {
            Some(Token::Ident(s)) => {
                let s = s.clone();
                self.at += 1;
                Some(s)
            }
            _ => None,
        }
    }

    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Token::Ident(s)) if s == w)
    }

    fn statement(&mut self) -> Option<Stmt> {
        if self.eat(";") {
            return Some(Stmt::Block(Vec::new()));
        }
        if self.eat("{") {
            let mut body = Vec::new();
            while !self.eat("}") {
                body.push(self.statement()?);
            }
            return Some(Stmt::Block(body));
        }
        if self.is_word("if") {
            self.at += 1;
            self.expect("(")?;
            let cond = self.expr()?;
            self.expect(")")?;
            let then = self.statement()?;
            let otherwise = if self.is_word("else") {
                self.at += 1;
                Some(Box::new(self.statement()?))
            } else {
                None
            };
            return Some(Stmt::If(cond, Box::new(then), otherwise));
        }
        if self.is_word("emit") {
            self.at += 1;
            self.expect("(")?;
            let mut args = Vec::new();
            if !self.eat(")") {
                loop {
                    args.push(self.expr()?);
                    if self.eat(")") {
                        break;
                    }
                    self.expect(",")?;
                }
            }
            if args.len() > 2 {
                return None;
            }
            // A missing `;` is inserted before `}` or a new line (QuickJS
            // compiled the source; what follows must start a statement).
            self.eat(";");
            return Some(Stmt::Emit(args));
        }
        None
    }

    fn expr(&mut self) -> Option<Expr> {
        let mut left = self.and()?;
        while self.eat("||") {
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Some(left)
    }

    fn and(&mut self) -> Option<Expr> {
        let mut left = self.equality()?;
        while self.eat("&&") {
            left = Expr::And(Box::new(left), Box::new(self.equality()?));
        }
        Some(left)
    }

    fn equality(&mut self) -> Option<Expr> {
        let mut left = self.relational()?;
        loop {
            let op = match self.peek() {
                Some(Token::Punct("===")) => Op::StrictEq,
                Some(Token::Punct("!==")) => Op::StrictNe,
                Some(Token::Punct("==")) => Op::LooseEq,
                Some(Token::Punct("!=")) => Op::LooseNe,
                _ => return Some(left),
            };
            self.at += 1;
            left = Expr::Compare(Box::new(left), op, Box::new(self.relational()?));
        }
    }

    fn relational(&mut self) -> Option<Expr> {
        let mut left = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Token::Punct("<")) => Op::Lt,
                Some(Token::Punct("<=")) => Op::Le,
                Some(Token::Punct(">")) => Op::Gt,
                Some(Token::Punct(">=")) => Op::Ge,
                _ => return Some(left),
            };
            self.at += 1;
            left = Expr::Compare(Box::new(left), op, Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Option<Expr> {
        if self.eat("!") {
            return Some(Expr::Not(Box::new(self.unary()?)));
        }
        if self.is_word("typeof") {
            self.at += 1;
            return Some(Expr::TypeOf(Box::new(self.unary()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Option<Expr> {
        let mut e = match self.peek()?.clone() {
            Token::Int(n) => {
                self.at += 1;
                Expr::Literal(Value::from(n))
            }
            Token::Str(s) => {
                self.at += 1;
                Expr::Literal(Value::String(s))
            }
            Token::Punct("(") => {
                self.at += 1;
                let e = self.expr()?;
                self.expect(")")?;
                e
            }
            Token::Punct("[") => {
                self.at += 1;
                let mut items = Vec::new();
                if !self.eat("]") {
                    loop {
                        items.push(self.expr()?);
                        if self.eat("]") {
                            break;
                        }
                        self.expect(",")?;
                        // `[a, ]` and holes are left to QuickJS.
                        if matches!(self.peek(), Some(Token::Punct("]" | ","))) {
                            return None;
                        }
                    }
                }
                Expr::Array(items)
            }
            Token::Ident(w) => {
                self.at += 1;
                match w.as_str() {
                    "null" => Expr::Literal(Value::Null),
                    "true" => Expr::Literal(Value::Bool(true)),
                    "false" => Expr::Literal(Value::Bool(false)),
                    "undefined" => Expr::Undefined,
                    w if w == self.param => Expr::Param,
                    _ => return None,
                }
            }
            Token::Punct(_) => return None,
        };
        loop {
            if self.eat(".") {
                let name = self.ident()?;
                e = Expr::Member(Box::new(e), name);
            } else if self.eat("[") {
                let name = match self.peek()?.clone() {
                    Token::Str(s) => s,
                    Token::Int(n) => n.to_string(),
                    _ => return None,
                };
                self.at += 1;
                self.expect("]")?;
                e = Expr::Member(Box::new(e), name);
            } else {
                return Some(e);
            }
        }
    }
}

impl NativeMap {
    /// The function `source` if it has an accepted shape (QuickJS has
    /// compiled it: this decides only whether it can run natively).
    pub fn parse(source: &str) -> Option<NativeMap> {
        let mut tokens = tokens(source)?;
        while tokens.last() == Some(&Token::Punct(";")) {
            tokens.pop();
        }
        let mut p = Parser { tokens, at: 0, param: String::new() };
        if !p.is_word("function") {
            return None;
        }
        p.at += 1;
        if !matches!(p.peek(), Some(Token::Punct("("))) {
            p.ident()?;
        }
        p.expect("(")?;
        p.param = p.ident()?;
        if RESERVED.contains(&p.param.as_str()) {
            return None;
        }
        p.expect(")")?;
        p.expect("{")?;
        let mut body = Vec::new();
        while !p.eat("}") {
            body.push(p.statement()?);
        }
        (p.at == p.tokens.len()).then_some(NativeMap { body })
    }

    /// The `[key, value]` pairs the function emits for `doc`, in order;
    /// `None` when this document is left to QuickJS.
    pub fn map(&self, doc: &Value) -> Option<Vec<(Value, Value)>> {
        let mut out = Vec::new();
        for s in &self.body {
            run(s, doc, &mut out)?;
        }
        Some(out)
    }
}

/// A value during evaluation: the document's own, or one made by the
/// function.
#[derive(Debug, Clone)]
enum Js<'a> {
    Undefined,
    Doc(&'a Value),
    Made(Value),
    /// An array literal: a new object, equal to no other.
    Array(Vec<Js<'a>>),
}

/// The members every object inherits from `Object.prototype`.
const INHERITED: [&str; 12] = [
    "constructor",
    "__proto__",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
];

fn run<'a>(s: &Stmt, doc: &'a Value, out: &mut Vec<(Value, Value)>) -> Option<()> {
    match s {
        Stmt::Emit(args) => {
            let key = match args.first() {
                Some(e) => emitted(&eval(e, doc)?)?,
                None => Value::Null,
            };
            let value = match args.get(1) {
                Some(e) => emitted(&eval(e, doc)?)?,
                None => Value::Null,
            };
            out.push((key, value));
        }
        Stmt::If(cond, then, otherwise) => {
            if truthy(&eval(cond, doc)?)? {
                run(then, doc, out)?;
            } else if let Some(o) = otherwise {
                run(o, doc, out)?;
            }
        }
        Stmt::Block(body) => {
            for s in body {
                run(s, doc, out)?;
            }
        }
    }
    Some(())
}

fn eval<'a>(e: &Expr, doc: &'a Value) -> Option<Js<'a>> {
    Some(match e {
        Expr::Param => Js::Doc(doc),
        Expr::Member(base, name) => match eval(base, doc)? {
            Js::Doc(Value::Object(o)) => match o.get(name) {
                Some(v) => Js::Doc(v),
                None if INHERITED.contains(&name.as_str()) => return None,
                None => Js::Undefined,
            },
            _ => return None,
        },
        Expr::Literal(v) => Js::Made(v.clone()),
        Expr::Undefined => Js::Undefined,
        Expr::Array(items) => Js::Array(items.iter().map(|i| eval(i, doc)).collect::<Option<_>>()?),
        Expr::Not(e) => Js::Made(Value::Bool(!truthy(&eval(e, doc)?)?)),
        Expr::TypeOf(e) => Js::Made(Value::String(
            match eval(e, doc)? {
                Js::Undefined => "undefined",
                Js::Array(_) => "object",
                Js::Doc(v) => type_of(v),
                Js::Made(v) => type_of(&v),
            }
            .to_owned(),
        )),
        Expr::And(a, b) => {
            let a = eval(a, doc)?;
            if truthy(&a)? {
                eval(b, doc)?
            } else {
                a
            }
        }
        Expr::Or(a, b) => {
            let a = eval(a, doc)?;
            if truthy(&a)? {
                a
            } else {
                eval(b, doc)?
            }
        }
        Expr::Compare(a, op, b) => Js::Made(Value::Bool(compare(&eval(a, doc)?, *op, &eval(b, doc)?)?)),
    })
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null | Value::Array(_) | Value::Object(_) => "object",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

/// A number as JavaScript has it, if it is an integer within 2^53.
fn exact_number(n: &serde_json::Number) -> Option<f64> {
    if let Some(i) = n.as_i64() {
        return (i.abs() <= SAFE_INTEGER).then_some(i as f64);
    }
    None
}

fn truthy(v: &Js) -> Option<bool> {
    Some(match v {
        Js::Undefined => false,
        Js::Array(_) => true,
        Js::Doc(v) => truthy_json(v)?,
        Js::Made(v) => truthy_json(v)?,
    })
}

fn truthy_json(v: &Value) -> Option<bool> {
    Some(match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => exact_number(n)? != 0.0,
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    })
}

/// What a comparison needs of a value.
enum Operand<'a> {
    Undefined,
    Null,
    Bool(bool),
    Number(f64),
    Str(&'a str),
    /// An object: equal only to itself.
    Object(*const ()),
}

fn operand<'a>(v: &'a Js<'a>) -> Option<Operand<'a>> {
    let json = match v {
        Js::Undefined => return Some(Operand::Undefined),
        Js::Array(items) => return Some(Operand::Object(items as *const _ as *const ())),
        Js::Doc(v) => *v,
        Js::Made(v) => v,
    };
    Some(match json {
        Value::Null => Operand::Null,
        Value::Bool(b) => Operand::Bool(*b),
        Value::Number(n) => Operand::Number(exact_number(n)?),
        Value::String(s) => Operand::Str(s),
        // The document's objects are the same object each time they are
        // read; a made one is never the document's.
        Value::Array(_) | Value::Object(_) => Operand::Object(json as *const Value as *const ()),
    })
}

fn compare(a: &Js, op: Op, b: &Js) -> Option<bool> {
    let (x, y) = (operand(a)?, operand(b)?);
    use Operand::*;
    let strict = |x: &Operand, y: &Operand| match (x, y) {
        (Undefined, Undefined) | (Null, Null) => true,
        (Bool(p), Bool(q)) => p == q,
        (Number(p), Number(q)) => p == q,
        (Str(p), Str(q)) => p == q,
        (Object(p), Object(q)) => p == q,
        _ => false,
    };
    let same_type = matches!((&x, &y), (Undefined, Undefined) | (Null, Null) | (Bool(_), Bool(_)) | (Number(_), Number(_)) | (Str(_), Str(_)) | (Object(_), Object(_)));
    let nullish = |v: &Operand| matches!(v, Undefined | Null);
    let loose = || {
        if same_type {
            Some(strict(&x, &y))
        } else if nullish(&x) || nullish(&y) {
            Some(nullish(&x) && nullish(&y))
        } else {
            None
        }
    };
    Some(match op {
        Op::StrictEq => strict(&x, &y),
        Op::StrictNe => !strict(&x, &y),
        Op::LooseEq => loose()?,
        Op::LooseNe => !loose()?,
        Op::Lt | Op::Le | Op::Gt | Op::Ge => {
            let (Number(p), Number(q)) = (&x, &y) else { return None };
            match op {
                Op::Lt => p < q,
                Op::Le => p <= q,
                Op::Gt => p > q,
                _ => p >= q,
            }
        }
    })
}

/// A value as `JSON.stringify` and `JSON.parse` would give it back, when
/// that is the value itself.
fn emitted(v: &Js) -> Option<Value> {
    match v {
        Js::Undefined => Some(Value::Null),
        Js::Array(items) => Some(Value::Array(items.iter().map(emitted).collect::<Option<_>>()?)),
        Js::Doc(v) => exact(v).then(|| (*v).clone()),
        Js::Made(v) => exact(v).then(|| v.clone()),
    }
}

/// Whether JavaScript keeps `v` as it is through a parse and a
/// serialization: integers within 2^53, and no object key that is an
/// array index (JavaScript lists those first).
fn exact(v: &Value) -> bool {
    match v {
        Value::Number(n) => exact_number(n).is_some(),
        Value::Array(items) => items.iter().all(exact),
        Value::Object(o) => o.iter().all(|(k, v)| !is_array_index(k) && exact(v)),
        _ => true,
    }
}

fn is_array_index(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()) && (k == "0" || !k.starts_with('0')) && k.parse::<u64>().is_ok_and(|n| n < u32::MAX as u64)
}

#[cfg(test)]
mod tests;
