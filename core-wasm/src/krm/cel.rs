//! CEL for PackageVariantSet templates, with upstream's environment and
//! hard resource limits.
//!
//! Upstream (`render.go`) builds a cel-go environment with the standard
//! library only (no extension libraries), the string variables
//! `repoDefault` and `packageDefault` and the dynamic variables `upstream`,
//! `target` and `repository`, and requires every result to be a string.
//! Here the `cel` crate parses and evaluates; this module adds what cel-go's
//! checker and Porch's controller gave, and what a shared WebAssembly
//! component needs:
//!
//! * **checking**: references to anything but the five variables (and
//!   comprehension variables and type names) and calls to anything but the
//!   standard functions are rejected before evaluation with cel-go's
//!   `undeclared reference to 'x' (in container '')`; optional syntax
//!   (`a.?b`), message construction (`T{…}`) and extension functions are
//!   not part of the environment;
//! * **error text**: syntax errors are written as cel-go writes them
//!   (`ERROR: <input>:L:C: msg`, then ` | source` and ` | ..^`), missing map
//!   keys as `no such key: k`, absent variables as `no such attribute(s): x`,
//!   non-string results as `unsupported type conversion from 'int' to
//!   string`;
//! * **limits** (see [`Limits`]): the source length, an approximate token
//!   count and bracket nesting are checked *before* the parser runs (the
//!   parser and evaluator recurse, and a WebAssembly stack is small); the
//!   AST's node count and depth after parsing; and before every evaluation a
//!   conservative upper bound of its cost is computed from the AST and the
//!   actual sizes of the variables (comprehension iterations multiply, string
//!   and list concatenation is charged by size), so an expression that would
//!   build a huge string or list or loop for long is refused instead of run.
//!   Results longer than [`Limits::max_result_len`] are refused too. The
//!   estimates are charged to a per-render [`Budget`]. What the estimate
//!   cannot see (a bug in it, or in the `cel` crate) is left to the
//!   component's fuel limit, which the host sets per call.
//!
//! Nothing here panics on any input: the `cel` crate's only panicking paths
//! in evaluation (unspecified expressions, struct fields in map literals)
//! are unreachable after the check, the limits keep every recursion
//! shallow (the worst accepted inputs run in 512 KiB of stack), and the
//! property tests feed random sources through compile and evaluate.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

use cel::common::ast::{operators, ComprehensionExpr, EntryExpr, Expr, LiteralValue, SourceInfo};
use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString,
};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::parser::{Expression as Ast, ParseErrors, Parser};
use cel::{Context, Env, ExecutionError, Value};

use crate::api::ObjectMeta;

/// Name of the default repository variable.
pub const REPO_DEFAULT_VAR: &str = "repoDefault";
/// Name of the default package variable.
pub const PACKAGE_DEFAULT_VAR: &str = "packageDefault";
/// Name of the upstream PackageRevision variable.
pub const UPSTREAM_VAR: &str = "upstream";
/// Name of the downstream Repository variable.
pub const REPOSITORY_VAR: &str = "repository";
/// Name of the target variable.
pub const TARGET_VAR: &str = "target";

const VARIABLES: [&str; 5] = [
    REPO_DEFAULT_VAR,
    PACKAGE_DEFAULT_VAR,
    UPSTREAM_VAR,
    TARGET_VAR,
    REPOSITORY_VAR,
];

/// Type names usable as identifiers (`type(x) == string`).
const TYPE_NAMES: [&str; 10] = [
    "bool",
    "bytes",
    "double",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
];

/// Standard functions callable as `f(x)`.
const GLOBAL_FUNCTIONS: [&str; 10] = [
    "size", "matches", "string", "bytes", "int", "uint", "double", "bool", "dyn", "type",
];

/// Standard functions callable as `x.f(y)`.
const MEMBER_FUNCTIONS: [&str; 5] = ["size", "contains", "startsWith", "endsWith", "matches"];

/// Operators (as the parser names them).
const OPERATORS: [&str; 19] = [
    operators::CONDITIONAL,
    operators::LOGICAL_AND,
    operators::LOGICAL_OR,
    operators::LOGICAL_NOT,
    operators::SUBSTRACT,
    operators::ADD,
    operators::MULTIPLY,
    operators::DIVIDE,
    operators::MODULO,
    operators::EQUALS,
    operators::NOT_EQUALS,
    operators::GREATER_EQUALS,
    operators::LESS_EQUALS,
    operators::GREATER,
    operators::LESS,
    operators::NEGATE,
    operators::INDEX,
    operators::IN,
    operators::NOT_STRICTLY_FALSE,
];

/// Resource limits of template expressions. The defaults are far above what
/// real templates need (a few dozen tokens, a few dozen cost units per
/// evaluation) and keep the worst case small: the parser needs about 8 KiB
/// of stack per nesting level in an optimised build, and one cost unit is
/// roughly one AST node visited or one byte or element copied or compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest expression source, in bytes (default 4096).
    pub max_source_len: usize,
    /// Most tokens, counted approximately (erring high) before parsing
    /// (default 512).
    pub max_tokens: usize,
    /// Deepest nesting of `(`, `[` and `{` (default 16); the parser's own
    /// recursion limit, which also stops unbracketed nesting such as chained
    /// conditionals, is twice this.
    pub max_nesting: usize,
    /// Most AST nodes after macro expansion (default 1024).
    pub max_ast_nodes: usize,
    /// Deepest AST (default 48), which bounds the evaluator's recursion.
    pub max_ast_depth: usize,
    /// Highest estimated cost of one evaluation (default 1,000,000).
    pub max_cost: u64,
    /// Longest result string, in bytes (default 65,536).
    pub max_result_len: usize,
    /// Highest total estimated cost of all evaluations of one render
    /// (default 100,000,000; a 10,000-target set with five simple
    /// expressions spends about 2,000,000).
    pub max_render_cost: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_source_len: 4096,
            max_tokens: 512,
            max_nesting: 16,
            max_ast_nodes: 1024,
            max_ast_depth: 48,
            max_cost: 1_000_000,
            max_result_len: 64 * 1024,
            max_render_cost: 100_000_000,
        }
    }
}

/// Why an expression could not be compiled or evaluated. Each message is
/// what follows the field path in a template error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CelError {
    /// Longer than [`Limits::max_source_len`].
    #[error("expression is {len} bytes long, more than the limit of {max}")]
    SourceTooLong {
        /// Length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// More tokens than [`Limits::max_tokens`].
    #[error("expression has about {count} tokens, more than the limit of {max}")]
    TooManyTokens {
        /// Approximate count.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// Brackets nested deeper than [`Limits::max_nesting`].
    #[error("expression nests brackets {depth} deep, more than the limit of {max}")]
    NestingTooDeep {
        /// Depth reached.
        depth: usize,
        /// The limit.
        max: usize,
    },
    /// The parser's errors, written as cel-go writes them.
    #[error("{0}")]
    Syntax(String),
    /// Undeclared variables or functions, or unsupported constructs, written
    /// as cel-go's checker writes them.
    #[error("{0}")]
    Check(String),
    /// More AST nodes or depth than allowed.
    #[error("expression is too complex: {0}")]
    TooComplex(String),
    /// The cost estimate exceeds [`Limits::max_cost`].
    #[error("expression is too expensive to evaluate: estimated cost {estimate} exceeds the limit of {max}")]
    TooExpensive {
        /// The estimate.
        estimate: u64,
        /// The limit.
        max: u64,
    },
    /// The render's [`Budget`] is spent.
    #[error("evaluation budget of the render exhausted (limit {max})")]
    BudgetExhausted {
        /// The budget.
        max: u64,
    },
    /// Evaluation failed.
    #[error("{0}")]
    Evaluation(String),
    /// The result is not a string.
    #[error("unsupported type conversion from '{0}' to string")]
    NotAString(String),
    /// A condition's result is not a boolean (kpt's wording).
    #[error("CEL expression must return a boolean, got {0}")]
    NotABool(String),
    /// The result is longer than [`Limits::max_result_len`].
    #[error("expression result is {len} bytes long, more than the limit of {max}")]
    ResultTooLong {
        /// Length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// The total cost all evaluations of one render may spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    limit: u64,
    spent: u64,
}

impl Budget {
    /// A budget of `limit` units.
    pub fn new(limit: u64) -> Self {
        Budget { limit, spent: 0 }
    }

    /// Units spent so far (sum of estimates).
    pub fn spent(&self) -> u64 {
        self.spent
    }

    fn charge(&mut self, cost: u64) -> Result<(), CelError> {
        let spent = self.spent.saturating_add(cost);
        if spent > self.limit {
            return Err(CelError::BudgetExhausted { max: self.limit });
        }
        self.spent = spent;
        Ok(())
    }
}

/// An upper bound of a value's size: `weight` bounds the total size (bytes
/// of strings plus one per element, entry and scalar); `element` bounds the
/// weight of any element or entry value (and of any map key).
/// `count` bounds the number of elements or entries (what a comprehension
/// iterates over); where it is not known it is the weight, which bounds it
/// too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    weight: u64,
    element: u64,
    count: u64,
}

impl Shape {
    const SCALAR: Shape = Shape {
        weight: 1,
        element: 1,
        count: 1,
    };
    const EMPTY: Shape = Shape {
        weight: 0,
        element: 0,
        count: 0,
    };

    /// A shape whose element count is bounded by its weight only.
    fn bounded(weight: u64, element: u64) -> Shape {
        Shape {
            weight,
            element,
            count: weight,
        }
    }

    fn string(len: usize) -> Shape {
        let w = (len as u64).saturating_add(1);
        Shape::bounded(w, w)
    }
}

/// An object as templates see it: name, namespace, labels and annotations —
/// nothing else of a cluster object reaches CEL (upstream's
/// `objectToInput`). Absent labels or annotations are empty maps, so a
/// missing key reads as `no such key: k`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectInput {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
}

impl ObjectInput {
    /// Reduces an object's metadata.
    pub fn from_meta(meta: &ObjectMeta) -> Self {
        ObjectInput {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            labels: meta.labels.clone(),
            annotations: meta.annotations.clone(),
        }
    }
}

/// A value bound to a CEL variable, converted once and reused by every
/// evaluation (with its size, for cost estimates). It borrows the strings
/// of the object it was made from.
#[derive(Debug)]
pub struct CelObject<'a> {
    value: Box<dyn Val + 'a>,
    shape: Shape,
}

impl<'a> CelObject<'a> {
    /// `{name, namespace, labels, annotations}` of a reduced object.
    pub fn object(input: &'a ObjectInput) -> Self {
        Self::reduced(
            &input.name,
            &input.namespace,
            &input.labels,
            &input.annotations,
        )
    }

    /// `{name, namespace, labels, annotations}` of an object's metadata
    /// (upstream's `objectToInput`: nothing else is visible).
    pub fn from_meta(meta: &'a ObjectMeta) -> Self {
        Self::reduced(&meta.name, &meta.namespace, &meta.labels, &meta.annotations)
    }

    fn reduced(
        name: &'a str,
        namespace: &'a str,
        labels: &'a BTreeMap<String, String>,
        annotations: &'a BTreeMap<String, String>,
    ) -> Self {
        let labels = string_map(labels);
        let annotations = string_map(annotations);
        let fields = [
            ("name", string_val(name), Shape::string(name.len())),
            (
                "namespace",
                string_val(namespace),
                Shape::string(namespace.len()),
            ),
            ("labels", labels.0, labels.1),
            ("annotations", annotations.0, annotations.1),
        ];
        let mut map: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = HashMap::with_capacity(4);
        let mut shape = Shape::bounded(1, 0);
        for (key, value, s) in fields {
            let key_weight = key.len() as u64 + 1;
            shape.weight = shape
                .weight
                .saturating_add(s.weight)
                .saturating_add(key_weight);
            shape.element = shape.element.max(s.weight).max(key_weight);
            map.insert(CelMapKey::from(key), value);
        }
        shape.count = 4;
        CelObject {
            value: Box::new(CelMap::from(map)),
            shape,
        }
    }

    /// `{repo, package}`: the target of an explicit `repositories` entry.
    pub fn target_defaults(repo: &'a str, package: &'a str) -> Self {
        let mut map: HashMap<CelMapKey<'a>, Box<dyn Val + 'a>> = HashMap::with_capacity(2);
        map.insert(CelMapKey::from("repo"), string_val(repo));
        map.insert(CelMapKey::from("package"), string_val(package));
        let (r, p) = (Shape::string(repo.len()), Shape::string(package.len()));
        CelObject {
            value: Box::new(CelMap::from(map)),
            shape: Shape {
                count: 2,
                ..Shape::bounded(
                    1 + 5 + 8 + r.weight + p.weight,
                    r.weight.max(p.weight).max(8),
                )
            },
        }
    }
}

fn string_val(s: &str) -> Box<dyn Val + '_> {
    Box::new(CelString::from(s))
}

fn string_map(entries: &BTreeMap<String, String>) -> (Box<dyn Val + '_>, Shape) {
    let mut map: HashMap<CelMapKey<'_>, Box<dyn Val + '_>> = HashMap::with_capacity(entries.len());
    let mut shape = Shape::bounded(1, 0);
    for (k, v) in entries {
        let (ks, vs) = (Shape::string(k.len()), Shape::string(v.len()));
        shape.weight = shape
            .weight
            .saturating_add(ks.weight)
            .saturating_add(vs.weight);
        shape.element = shape.element.max(ks.weight).max(vs.weight);
        map.insert(CelMapKey::from(k.as_str()), string_val(v));
    }
    shape.count = entries.len() as u64;
    (Box::new(CelMap::from(map)), shape)
}

/// The variables of one evaluation. An absent `upstream`, `target` or
/// `repository` is declared but unbound: referencing it fails with
/// `no such attribute(s): <name>` (as `repository` does in `repoExpr`).
#[derive(Debug, Clone, Copy)]
pub struct Variables<'a> {
    /// `repoDefault`.
    pub repo_default: &'a str,
    /// `packageDefault`.
    pub package_default: &'a str,
    /// `upstream`.
    pub upstream: Option<&'a CelObject<'a>>,
    /// `target`.
    pub target: Option<&'a CelObject<'a>>,
    /// `repository`.
    pub repository: Option<&'a CelObject<'a>>,
}

/// The sizes of an evaluation's variables, for its cost estimate.
trait Shapes {
    fn shape(&self, name: &str) -> Option<Shape>;
}

impl Shapes for Variables<'_> {
    fn shape(&self, name: &str) -> Option<Shape> {
        Variables::shape(self, name)
    }
}

/// Name of the variable of function conditions.
pub const RESOURCES_VAR: &str = "resources";

const CONDITION_VARIABLES: [&str; 1] = [RESOURCES_VAR];

/// Name of the variable of a rollout's `readyWhen`: the downstream
/// PackageRevision.
pub const REVISION_VAR: &str = "revision";

const READINESS_VARIABLES: [&str; 1] = [REVISION_VAR];

/// The `resources` of a function condition: the step's input items as
/// JSON, converted once.
pub struct ConditionInput {
    name: &'static str,
    value: Box<dyn Val + 'static>,
    shape: Shape,
}

impl fmt::Debug for ConditionInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConditionInput")
            .field("weight", &self.shape.weight)
            .finish_non_exhaustive()
    }
}

impl ConditionInput {
    /// `resources` bound to `items` (each a whole resource).
    pub fn new(items: &[serde_json::Value]) -> Self {
        let (value, shape) = json_val(&serde_json::Value::Array(items.to_vec()));
        ConditionInput {
            name: RESOURCES_VAR,
            value,
            shape,
        }
    }

    /// `revision` bound to one PackageRevision (as JSON), for a rollout's
    /// `readyWhen` ([`CelEnv::readiness`]).
    pub fn revision(object: &serde_json::Value) -> Self {
        let (value, shape) = json_val(object);
        ConditionInput {
            name: REVISION_VAR,
            value,
            shape,
        }
    }
}

impl Shapes for ConditionInput {
    fn shape(&self, name: &str) -> Option<Shape> {
        (name == self.name).then_some(self.shape)
    }
}

impl VariableResolver for ConditionInput {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        (variable == self.name).then(|| CowVal::Borrowed(&*self.value))
    }
}

/// A JSON value as a CEL value, with its size (numbers are ints when
/// they are integers, as YAML's are).
fn json_val(v: &serde_json::Value) -> (Box<dyn Val + 'static>, Shape) {
    use serde_json::Value as J;
    match v {
        J::Null => (Box::new(CelNull), Shape::SCALAR),
        J::Bool(b) => (Box::new(CelBool::from(*b)), Shape::SCALAR),
        J::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => (Box::new(CelInt::from(i)), Shape::SCALAR),
            (None, Some(f)) => (Box::new(CelDouble::from(f)), Shape::SCALAR),
            (None, None) => (Box::new(CelNull), Shape::SCALAR),
        },
        J::String(s) => (Box::new(CelString::from(s.clone())), Shape::string(s.len())),
        J::Array(items) => {
            let mut shape = Shape::bounded(1, 0);
            let mut out: Vec<Box<dyn Val>> = Vec::with_capacity(items.len());
            for item in items {
                let (val, s) = json_val(item);
                shape.weight = shape.weight.saturating_add(s.weight);
                shape.element = shape.element.max(s.weight);
                out.push(val);
            }
            shape.count = items.len() as u64;
            (Box::new(CelList::from(out)), shape)
        }
        J::Object(map) => {
            let mut shape = Shape::bounded(1, 0);
            let mut out: HashMap<CelMapKey<'static>, Box<dyn Val>> =
                HashMap::with_capacity(map.len());
            for (k, item) in map {
                let (val, s) = json_val(item);
                let key_weight = k.len() as u64 + 1;
                shape.weight = shape
                    .weight
                    .saturating_add(s.weight)
                    .saturating_add(key_weight);
                shape.element = shape.element.max(s.weight).max(key_weight);
                out.insert(CelMapKey::from(k.clone()), val);
            }
            shape.count = map.len() as u64;
            (Box::new(CelMap::from(out)), shape)
        }
    }
}

impl Variables<'_> {
    fn shape(&self, name: &str) -> Option<Shape> {
        match name {
            REPO_DEFAULT_VAR => Some(Shape::string(self.repo_default.len())),
            PACKAGE_DEFAULT_VAR => Some(Shape::string(self.package_default.len())),
            UPSTREAM_VAR => self.upstream.map(|o| o.shape),
            TARGET_VAR => self.target.map(|o| o.shape),
            REPOSITORY_VAR => self.repository.map(|o| o.shape),
            _ => None,
        }
    }
}

impl VariableResolver for Variables<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        match variable {
            REPO_DEFAULT_VAR => Some(CowVal::owned(CelString::from(self.repo_default))),
            PACKAGE_DEFAULT_VAR => Some(CowVal::owned(CelString::from(self.package_default))),
            UPSTREAM_VAR => self.upstream.map(|o| CowVal::Borrowed(&*o.value)),
            TARGET_VAR => self.target.map(|o| CowVal::Borrowed(&*o.value)),
            REPOSITORY_VAR => self.repository.map(|o| CowVal::Borrowed(&*o.value)),
            _ => None,
        }
    }
}

/// A checked expression, ready to evaluate any number of times.
pub struct Program {
    ast: Ast,
    nodes: usize,
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("nodes", &self.nodes)
            .finish_non_exhaustive()
    }
}

/// The CEL environment of templates: the standard library, no optional
/// syntax, no extensions. Build one per render and share it.
#[derive(Clone)]
pub struct CelEnv {
    env: Arc<Env>,
    limits: Limits,
    variables: &'static [&'static str],
}

impl fmt::Debug for CelEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CelEnv")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for CelEnv {
    fn default() -> Self {
        CelEnv::new(Limits::default())
    }
}

impl CelEnv {
    /// An environment with `limits`.
    pub fn new(limits: Limits) -> Self {
        CelEnv {
            env: Arc::new(Env::stdlib().with_optional_support(false)),
            limits,
            variables: &VARIABLES,
        }
    }

    /// The environment of kpt's function conditions (`when`): the one
    /// variable `resources`, the standard library, boolean results
    /// ([`CelEnv::eval_condition`]), with `limits`.
    pub fn conditions(limits: Limits) -> Self {
        CelEnv {
            env: Arc::new(Env::stdlib().with_optional_support(false)),
            limits,
            variables: &CONDITION_VARIABLES,
        }
    }

    /// The environment of a rollout's `readyWhen`: the one variable
    /// `revision` (a downstream PackageRevision), the standard library,
    /// boolean results ([`CelEnv::eval_condition`]), with `limits`.
    pub fn readiness(limits: Limits) -> Self {
        CelEnv {
            env: Arc::new(Env::stdlib().with_optional_support(false)),
            limits,
            variables: &READINESS_VARIABLES,
        }
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Checks the limits, parses and checks `source`.
    pub fn compile(&self, source: &str) -> Result<Program, CelError> {
        let limits = &self.limits;
        if source.len() > limits.max_source_len {
            return Err(CelError::SourceTooLong {
                len: source.len(),
                max: limits.max_source_len,
            });
        }
        prescan(source, limits)?;
        let parser = Parser::new()
            .enable_optional_syntax(false)
            .max_recursion_depth(u16::try_from(limits.max_nesting.saturating_mul(2)).unwrap_or(64));
        let (ast, info) = parser
            .parse_with_source_info(source)
            .map_err(|e| CelError::Syntax(format_parse_errors(&e, source)))?;
        let mut checker = Checker {
            limits,
            variables: self.variables,
            nodes: 0,
            scopes: Vec::new(),
            issues: Vec::new(),
            too_complex: None,
        };
        checker.check(&ast, 1);
        if let Some(msg) = checker.too_complex {
            return Err(CelError::TooComplex(msg));
        }
        if !checker.issues.is_empty() {
            return Err(CelError::Check(format_check_issues(
                checker.issues,
                &info,
                source,
            )));
        }
        Ok(Program {
            ast,
            nodes: checker.nodes,
        })
    }

    /// Estimates, charges and evaluates `program`; the result must be a
    /// string no longer than the limit.
    pub fn eval(
        &self,
        program: &Program,
        vars: &Variables<'_>,
        budget: &mut Budget,
    ) -> Result<String, CelError> {
        let value = self.evaluate(program, vars, vars, budget)?;
        match value.downcast_ref::<CelString>() {
            Some(s) => {
                let s = s.inner();
                if s.len() > self.limits.max_result_len {
                    return Err(CelError::ResultTooLong {
                        len: s.len(),
                        max: self.limits.max_result_len,
                    });
                }
                Ok(s.to_string())
            }
            None => Err(CelError::NotAString(value.get_type().name().to_string())),
        }
    }

    /// Estimates, charges and evaluates `program` over `resolver`.
    fn evaluate<'r>(
        &self,
        program: &Program,
        resolver: &'r dyn VariableResolver,
        shapes: &dyn Shapes,
        budget: &mut Budget,
    ) -> Result<Box<dyn Val + 'r>, CelError> {
        let estimate = self.estimate(program, shapes);
        if estimate > self.limits.max_cost {
            return Err(CelError::TooExpensive {
                estimate,
                max: self.limits.max_cost,
            });
        }
        budget.charge(estimate)?;
        let mut ctx = Context::with_env(Arc::clone(&self.env));
        ctx.set_variable_resolver(resolver);
        let value = Value::resolve_val(&program.ast, &ctx).map_err(exec_error)?;
        Ok(value.into_owned())
    }

    /// Estimates, charges and evaluates a condition (from an environment
    /// made by [`CelEnv::conditions`] or [`CelEnv::readiness`]) over its
    /// input; the result must be a boolean.
    pub fn eval_condition(
        &self,
        program: &Program,
        resources: &ConditionInput,
        budget: &mut Budget,
    ) -> Result<bool, CelError> {
        let value = self.evaluate(program, resources, resources, budget)?;
        match value.downcast_ref::<CelBool>() {
            Some(b) => Ok(bool::from(*b)),
            None => Err(CelError::NotABool(value.get_type().name().to_string())),
        }
    }

    /// Compiles and evaluates `source` once (a fresh budget of
    /// [`Limits::max_render_cost`]).
    pub fn eval_source(&self, source: &str, vars: &Variables<'_>) -> Result<String, CelError> {
        let program = self.compile(source)?;
        self.eval(
            &program,
            vars,
            &mut Budget::new(self.limits.max_render_cost),
        )
    }

    /// The cost estimate of evaluating `program` with `vars`.
    fn estimate(&self, program: &Program, vars: &dyn Shapes) -> u64 {
        let mut est = Estimator {
            vars,
            scopes: Vec::new(),
            cost: 0,
        };
        est.shape(&program.ast);
        est.cost
    }
}

/// Counts tokens (approximately, erring high) and bracket nesting without
/// parsing, so that nothing recursive ever sees a hostile input.
fn prescan(source: &str, limits: &Limits) -> Result<(), CelError> {
    let b = source.as_bytes();
    let (mut i, mut tokens, mut depth, mut max_depth) = (0usize, 0usize, 0usize, 0usize);
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        tokens += 1;
        if c == b'\'' || c == b'"' {
            let triple = b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c);
            i += if triple { 3 } else { 1 };
            while i < b.len() {
                if b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == c && (!triple || (b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c)))
                {
                    i += if triple { 3 } else { 1 };
                    break;
                }
                if !triple && b[i] == b'\n' {
                    break;
                }
                i += 1;
            }
            continue;
        }
        if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] >= 0x80) {
                i += 1;
            }
            continue;
        }
        match c {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max_depth = max_depth.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    if tokens > limits.max_tokens {
        return Err(CelError::TooManyTokens {
            count: tokens,
            max: limits.max_tokens,
        });
    }
    if max_depth > limits.max_nesting {
        return Err(CelError::NestingTooDeep {
            depth: max_depth,
            max: limits.max_nesting,
        });
    }
    Ok(())
}

/// cel-go's rendering of one error: `ERROR: <input>:L:C: msg`, then the
/// source line and a caret under the column.
fn format_error(out: &mut String, line: isize, col: isize, msg: &str, source: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("ERROR: <input>:{line}:{col}: {msg}"));
    if line < 1 || col < 1 {
        return;
    }
    let Some(snippet) = source.lines().nth((line - 1) as usize) else {
        return;
    };
    out.push_str("\n | ");
    out.push_str(snippet);
    out.push_str("\n | ");
    let width = snippet.chars().count() + 1;
    let dots = ((col - 1) as usize).min(width);
    out.extend(std::iter::repeat_n('.', dots));
    out.push('^');
}

fn format_parse_errors(errors: &ParseErrors, source: &str) -> String {
    let mut out = String::new();
    for e in errors.errors.iter().take(16) {
        let msg = if e.msg.contains("Recursion limit of") {
            "Syntax error: expression nested too deeply".to_string()
        } else {
            truncate(&e.msg, 512)
        };
        format_error(&mut out, e.pos.0, e.pos.1, &msg, source);
    }
    if out.is_empty() {
        out.push_str("ERROR: <input>: Syntax error");
    }
    out
}

fn format_check_issues(mut issues: Vec<(u64, String)>, info: &SourceInfo, source: &str) -> String {
    let mut located: Vec<(u32, String)> = issues
        .drain(..)
        .map(|(id, msg)| (info.offset_for(id).map_or(0, |(start, _)| start), msg))
        .collect();
    located.sort();
    located.dedup();
    let mut out = String::new();
    for (offset, msg) in located.iter().take(16) {
        let (line, col) = line_col(source, *offset as usize);
        format_error(&mut out, line, col, msg, source);
    }
    out
}

/// 1-based line and column of the `offset`-th character.
fn line_col(source: &str, offset: usize) -> (isize, isize) {
    let (mut line, mut col) = (1isize, 1isize);
    for c in source.chars().take(offset) {
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut cut = max;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}…", &s[..cut])
}

/// cel-go's wording of evaluation errors where it differs; messages are
/// capped (they may quote values).
fn exec_error(e: ExecutionError) -> CelError {
    let msg = match &e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::UndeclaredReference(name) => format!("no such attribute(s): {name}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_string(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_string(),
        ExecutionError::Overflow(..) => "integer overflow".to_string(),
        ExecutionError::IndexOutOfBounds(_) => "index out of range".to_string(),
        other => other.to_string(),
    };
    CelError::Evaluation(truncate(&msg, 1024))
}

/// The static check: declared names only, supported constructs only, node
/// count and depth within limits. Recursion stops at the depth limit.
struct Checker<'l> {
    limits: &'l Limits,
    variables: &'l [&'l str],
    nodes: usize,
    scopes: Vec<String>,
    issues: Vec<(u64, String)>,
    too_complex: Option<String>,
}

impl Checker<'_> {
    fn undeclared(&mut self, id: u64, name: &str) {
        self.issues.push((
            id,
            format!("undeclared reference to '{name}' (in container '')"),
        ));
    }

    fn in_scope(&self, name: &str) -> bool {
        self.scopes.iter().any(|s| s == name)
    }

    fn check(&mut self, e: &Ast, depth: usize) {
        if self.too_complex.is_some() {
            return;
        }
        self.nodes += 1;
        if self.nodes > self.limits.max_ast_nodes {
            self.too_complex = Some(format!(
                "more than {} nodes after macro expansion",
                self.limits.max_ast_nodes
            ));
            return;
        }
        if depth > self.limits.max_ast_depth {
            self.too_complex = Some(format!(
                "nested more than {} levels deep",
                self.limits.max_ast_depth
            ));
            return;
        }
        match &e.expr {
            Expr::Unspecified => self
                .issues
                .push((e.id, "unsupported expression".to_string())),
            Expr::Literal(_) => {}
            Expr::Ident(name) => {
                if !(self.in_scope(name)
                    || self.variables.contains(&name.as_str())
                    || TYPE_NAMES.contains(&name.as_str()))
                {
                    self.undeclared(e.id, name);
                }
            }
            Expr::Select(sel) => self.check(&sel.operand, depth + 1),
            Expr::List(list) => {
                if !list.optional_indices.is_empty() {
                    self.issues
                        .push((e.id, "unsupported syntax '?'".to_string()));
                }
                for el in &list.elements {
                    self.check(el, depth + 1);
                }
            }
            Expr::Map(map) => {
                for entry in &map.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            if me.optional {
                                self.issues
                                    .push((entry.id, "unsupported syntax '?'".to_string()));
                            }
                            self.check(&me.key, depth + 1);
                            self.check(&me.value, depth + 1);
                        }
                        EntryExpr::StructField(_) => self
                            .issues
                            .push((entry.id, "unsupported expression".to_string())),
                    }
                }
            }
            Expr::Struct(st) => {
                let name = st.type_name.clone();
                self.undeclared(e.id, &name);
            }
            Expr::Call(call) => {
                let name = call.func_name.as_str();
                let known = match &call.target {
                    Some(_) => MEMBER_FUNCTIONS.contains(&name),
                    None => OPERATORS.contains(&name) || GLOBAL_FUNCTIONS.contains(&name),
                };
                if !known {
                    self.undeclared(e.id, name);
                }
                if let Some(t) = &call.target {
                    self.check(t, depth + 1);
                }
                for a in &call.args {
                    self.check(a, depth + 1);
                }
            }
            Expr::Comprehension(c) => {
                if c.iter_var2.is_some() {
                    self.issues
                        .push((e.id, "unsupported two-variable comprehension".to_string()));
                }
                self.check(&c.iter_range, depth + 1);
                self.check(&c.accu_init, depth + 1);
                self.scopes.push(c.accu_var.clone());
                self.scopes.push(c.iter_var.clone());
                self.check(&c.loop_cond, depth + 1);
                self.check(&c.loop_step, depth + 1);
                self.scopes.pop();
                self.check(&c.result, depth + 1);
                self.scopes.pop();
            }
        }
    }
}

/// Cost units of compiling a regular expression (`matches`).
const REGEX_COMPILE_COST: u64 = 2_000;

/// The cost estimate: an upper bound of the work and memory of evaluating
/// an expression, given the variables' actual sizes. One unit is roughly
/// one node visit or one byte or element copied or compared.
struct Estimator<'a> {
    vars: &'a dyn Shapes,
    scopes: Vec<(&'a str, Shape)>,
    cost: u64,
}

impl<'a> Estimator<'a> {
    fn add(&mut self, units: u64) {
        self.cost = self.cost.saturating_add(units);
    }

    fn lookup(&self, name: &str) -> Shape {
        if let Some((_, s)) = self.scopes.iter().rev().find(|(n, _)| *n == name) {
            return *s;
        }
        self.vars.shape(name).unwrap_or(Shape::SCALAR)
    }

    fn shape(&mut self, e: &'a Ast) -> Shape {
        self.add(1);
        match &e.expr {
            Expr::Unspecified | Expr::Struct(_) => Shape::SCALAR,
            Expr::Literal(lit) => match lit {
                LiteralValue::String(s) => Shape::string(s.inner().len()),
                LiteralValue::Bytes(b) => Shape::string(b.inner().len()),
                _ => Shape::SCALAR,
            },
            Expr::Ident(name) => self.lookup(name),
            Expr::Select(sel) => {
                let operand = self.shape(&sel.operand);
                if sel.test {
                    Shape::SCALAR
                } else {
                    Shape::bounded(operand.element, operand.element)
                }
            }
            Expr::List(list) => {
                let mut shape = Shape::bounded(1, 0);
                for el in &list.elements {
                    let s = self.shape(el);
                    shape.weight = shape.weight.saturating_add(s.weight);
                    shape.element = shape.element.max(s.weight);
                }
                shape.count = list.elements.len() as u64;
                self.add(shape.weight);
                shape
            }
            Expr::Map(map) => {
                let mut shape = Shape::bounded(1, 0);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        let k = self.shape(&me.key);
                        let v = self.shape(&me.value);
                        shape.weight = shape
                            .weight
                            .saturating_add(k.weight)
                            .saturating_add(v.weight);
                        shape.element = shape.element.max(k.weight).max(v.weight);
                    }
                }
                shape.count = map.entries.len() as u64;
                self.add(shape.weight);
                shape
            }
            Expr::Call(call) => {
                // The first three operands (all any standard function has)
                // and the total weight of all.
                let mut args = [Shape::SCALAR; 3];
                let mut total = 0u64;
                let operands = call.target.as_deref().into_iter().chain(call.args.iter());
                for (i, a) in operands.enumerate() {
                    let s = self.shape(a);
                    total = total.saturating_add(s.weight);
                    if let Some(slot) = args.get_mut(i) {
                        *slot = s;
                    }
                }
                self.call(&call.func_name, &args, total)
            }
            Expr::Comprehension(c) => self.comprehension(c),
        }
    }

    fn call(&mut self, name: &str, args: &[Shape; 3], total: u64) -> Shape {
        let arg = |i: usize| args[i];
        match name {
            operators::ADD => {
                let (a, b) = (arg(0), arg(1));
                self.add(total);
                Shape::bounded(a.weight.saturating_add(b.weight), a.element.max(b.element))
            }
            operators::CONDITIONAL => {
                let (a, b) = (arg(1), arg(2));
                Shape::bounded(a.weight.max(b.weight), a.element.max(b.element))
            }
            operators::INDEX => {
                let container = arg(0);
                self.add(arg(1).weight);
                Shape::bounded(container.element, container.element)
            }
            "matches" => {
                let (text, pattern) = (arg(0), arg(1));
                self.add(
                    REGEX_COMPILE_COST
                        .saturating_add(pattern.weight.saturating_mul(16))
                        .saturating_add(text.weight.saturating_mul(pattern.weight.max(1))),
                );
                Shape::SCALAR
            }
            "string" | "bytes" | "dyn" => {
                let a = arg(0);
                self.add(total);
                Shape::bounded(a.weight.saturating_add(32), a.element.saturating_add(32))
            }
            _ => {
                // Comparisons, `in`, size, contains, …: at most a pass over
                // the operands; scalar result.
                self.add(total);
                Shape::SCALAR
            }
        }
    }

    fn comprehension(&mut self, c: &'a ComprehensionExpr) -> Shape {
        let range = self.shape(&c.iter_range);
        let init = self.shape(&c.accu_init);
        let iterations = range.count;
        let item = Shape::bounded(range.element, range.element);
        // Growth of the accumulator per iteration: the step's result with an
        // empty accumulator (macro steps are `accu ⊕ f(x)`).
        let saved = self.cost;
        self.scopes.push((&c.accu_var, Shape::EMPTY));
        self.scopes.push((&c.iter_var, item));
        let delta = self.shape(&c.loop_step);
        self.scopes.pop();
        self.scopes.pop();
        self.cost = saved;
        let accu = Shape::bounded(
            init.weight
                .saturating_add(iterations.saturating_mul(delta.weight)),
            init.element.max(delta.element),
        );
        // Cost of one iteration: `map`/`filter` append in place (the `cel`
        // crate's `MutableList`), anything else may copy the accumulator.
        let step_accu = if is_append_step(c) {
            Shape::EMPTY
        } else {
            accu
        };
        self.scopes.push((&c.accu_var, step_accu));
        self.scopes.push((&c.iter_var, item));
        let before = self.cost;
        self.shape(&c.loop_cond);
        self.shape(&c.loop_step);
        let per_iteration = self.cost - before;
        self.cost = before;
        self.scopes.pop();
        self.scopes.pop();
        self.add(iterations.saturating_mul(per_iteration.saturating_add(1)));
        self.scopes.push((&c.accu_var, accu));
        let result = self.shape(&c.result);
        self.scopes.pop();
        result
    }
}

/// The `map` / `filter` step shape the `cel` crate evaluates by appending in
/// place: result `accu`, literal condition, step `accu + [x]` or
/// `g ? accu + [x] : accu`, initial `[]`.
fn is_append_step(c: &ComprehensionExpr) -> bool {
    let accu = c.accu_var.as_str();
    let is_accu = |e: &Ast| matches!(&e.expr, Expr::Ident(n) if n == accu);
    let appends = |e: &Ast| match &e.expr {
        Expr::Call(call) if call.func_name == operators::ADD && call.target.is_none() => {
            matches!(call.args.as_slice(), [l, r] if is_accu(l) && matches!(r.expr, Expr::List(_)))
        }
        _ => false,
    };
    let empty_init = matches!(&c.accu_init.expr, Expr::List(l) if l.elements.is_empty());
    if !is_accu(&c.result) || !matches!(c.loop_cond.expr, Expr::Literal(_)) || !empty_init {
        return false;
    }
    match &c.loop_step.expr {
        Expr::Call(call) if call.func_name == operators::CONDITIONAL && call.target.is_none() => {
            matches!(call.args.as_slice(), [_, step, otherwise] if appends(step) && is_accu(otherwise))
        }
        _ => appends(&c.loop_step),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target_input() -> ObjectInput {
        let mut labels = BTreeMap::new();
        labels.insert("foo".to_string(), "bar".to_string());
        labels.insert("abc".to_string(), "def".to_string());
        ObjectInput {
            name: "my-repo-1".into(),
            namespace: String::new(),
            labels,
            annotations: BTreeMap::new(),
        }
    }

    fn eval(src: &str) -> Result<String, CelError> {
        let input = target_input();
        let target = CelObject::object(&input);
        let repo = CelObject::target_defaults("r", "p");
        let v = Variables {
            repo_default: "foo-repo",
            package_default: "bar-package",
            upstream: None,
            target: Some(&target),
            repository: Some(&repo),
        };
        CelEnv::default().eval_source(src, &v)
    }

    #[test]
    fn evaluates_templates() {
        assert_eq!(
            eval("packageDefault + '-' + repoDefault").unwrap(),
            "bar-package-foo-repo"
        );
        assert_eq!(
            eval("target.name + '/' + target.labels['foo']").unwrap(),
            "my-repo-1/bar"
        );
        assert_eq!(eval("repository.repo").unwrap(), "r");
        assert_eq!(eval("string(size(target.labels))").unwrap(), "2");
        assert_eq!(
            eval("target.labels.filter(k, k.startsWith('a'))[0]").unwrap(),
            "abc"
        );
        assert_eq!(eval("'x' in target.labels ? 'y' : 'n'").unwrap(), "n");
        assert_eq!(eval("[1, 2, 3].map(x, string(x))[2]").unwrap(), "3");
        assert_eq!(
            eval("repoDefault.matches('^foo') ? 'yes' : 'no'").unwrap(),
            "yes"
        );
    }

    #[test]
    fn syntax_errors_are_written_as_cel_go_writes_them() {
        let err = eval("/").unwrap_err().to_string();
        assert_eq!(
            err,
            "ERROR: <input>:1:1: Syntax error: mismatched input '/' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | /\n | ^\nERROR: <input>:1:2: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}\n | /\n | .^"
        );
        for src in [
            "1 +",
            "(",
            "'unterminated",
            "a.",
            "[1,",
            "{",
            "",
            " ",
            ")",
            "1 ? 2",
            "--",
            "!!",
            "target.?name",
            "target[?0]",
        ] {
            assert!(
                matches!(eval(src), Err(CelError::Syntax(_))),
                "{src:?}: {:?}",
                eval(src)
            );
        }
    }

    #[test]
    fn undeclared_names_are_rejected_before_evaluation() {
        assert_eq!(
            eval("badvar").unwrap_err().to_string(),
            "ERROR: <input>:1:1: undeclared reference to 'badvar' (in container '')\n | badvar\n | ^"
        );
        let err = eval("repoDefault + lowerAscii(packageDefault)").unwrap_err();
        assert!(
            err.to_string()
                .contains("undeclared reference to 'lowerAscii'"),
            "{err}"
        );
        let err = eval("repoDefault.lowerAscii()").unwrap_err();
        assert!(matches!(err, CelError::Check(_)), "{err}");
        let err = eval("Foo{a: 1}").unwrap_err();
        assert!(matches!(err, CelError::Check(_)), "{err}");
        // comprehension variables are in scope only inside
        assert!(eval("[1].map(x, string(x))[0] + x").is_err());
        assert_eq!(eval("['a'].map(target, target)[0]").unwrap(), "a");
    }

    #[test]
    fn evaluation_errors_use_cel_go_wording() {
        assert_eq!(
            eval("target.name + '/' + target.labels['no-such-label']")
                .unwrap_err()
                .to_string(),
            "no such key: no-such-label"
        );
        assert_eq!(
            eval("upstream.name").unwrap_err().to_string(),
            "no such attribute(s): upstream"
        );
        assert_eq!(
            eval("15").unwrap_err().to_string(),
            "unsupported type conversion from 'int' to string"
        );
        assert_eq!(
            eval("[1]").unwrap_err().to_string(),
            "unsupported type conversion from 'list' to string"
        );
        assert_eq!(
            eval("string(1 / 0)").unwrap_err().to_string(),
            "division by zero"
        );
    }

    #[test]
    fn hostile_expressions_are_refused() {
        // exponential list building
        let ten = "[0,1,2,3,4,5,6,7,8,9]";
        let nested = format!(
            "string(size({ten}.map(a, {ten}.map(b, {ten}.map(c, {ten}.map(d, {ten}.map(e, {ten}.map(f, 'xxxxxxxxxx'))))))))"
        );
        assert!(
            matches!(eval(&nested), Err(CelError::TooExpensive { .. })),
            "{:?}",
            eval(&nested)
        );
        // a string doubled many times
        let mut s = "repoDefault".to_string();
        for _ in 0..8 {
            s = format!("({s} + {s})");
        }
        let e = eval(&s);
        assert!(
            matches!(
                e,
                Err(CelError::TooManyTokens { .. }) | Err(CelError::TooExpensive { .. })
            ),
            "{e:?}"
        );
        // deep nesting and long sources never reach the parser
        assert!(matches!(
            eval(&format!("{}1{}", "(".repeat(100), ")".repeat(100))),
            Err(CelError::NestingTooDeep { .. })
        ));
        assert!(matches!(
            eval(&"a+".repeat(3000)),
            Err(CelError::SourceTooLong { .. })
        ));
        assert!(matches!(
            eval(&vec!["repoDefault"; 300].join("+")),
            Err(CelError::TooManyTokens { .. })
        ));
        let chain = vec!["repoDefault"; 100].join("+");
        assert!(
            matches!(eval(&chain), Err(CelError::TooComplex(_))),
            "{:?}",
            eval(&chain)
        );
    }

    #[test]
    fn result_length_is_capped() {
        let env = CelEnv::new(Limits {
            max_result_len: 8,
            ..Limits::default()
        });
        let v = Variables {
            repo_default: "0123456789",
            package_default: "",
            upstream: None,
            target: None,
            repository: None,
        };
        assert!(matches!(
            env.eval_source("repoDefault", &v),
            Err(CelError::ResultTooLong { len: 10, max: 8 })
        ));
    }

    #[test]
    fn the_budget_is_shared() {
        let env = CelEnv::default();
        let program = env.compile("repoDefault + packageDefault").unwrap();
        let v = Variables {
            repo_default: "a",
            package_default: "b",
            upstream: None,
            target: None,
            repository: None,
        };
        let mut budget = Budget::new(30);
        let mut ok = 0;
        while env.eval(&program, &v, &mut budget).is_ok() {
            ok += 1;
        }
        assert!(ok >= 1);
        assert!(matches!(
            env.eval(&program, &v, &mut budget),
            Err(CelError::BudgetExhausted { max: 30 })
        ));
    }
}
