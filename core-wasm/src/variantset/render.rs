//! `renderPackageVariantSpec`: the PackageVariant spec of one unrolled
//! target, from the set's template.
//!
//! Without a template the spec is just the set's upstream and the defaults.
//! With one, the variables are `repoDefault`, `packageDefault`, `upstream`
//! (the upstream PackageRevision, reduced) and `target` (the selected
//! object reduced, or `{repo, package}` for explicit targets); the
//! downstream repo is decided first (static value, then `repoExpr`), then
//! the Repository of that name must exist and becomes `repository` for all
//! further expressions. Static values come first and expressions overlay
//! them; `removeKeys` are sorted and de-duplicated; empty maps are absent.
//! Errors name the field: `template.downstream.repoExpr: <cause>`,
//! `template.labelExprs[2].valueExpr: <cause>`, … — or are
//! `repository "<name>" could not be loaded`.
//!
//! Each distinct expression source is compiled once per [`Evaluator`] (one
//! per render), whatever the number of targets.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::scope::in_namespace;
use super::types::{FunctionTemplate, MapExpr, PackageVariantTemplate, Repository};
use super::unroll::UnrolledTarget;
use crate::api::{
    Downstream, Function, InjectionSelector, PackageContext, PackageVariantSpec, Pipeline, Upstream,
};
use crate::krm::cel::{Budget, CelEnv, CelError, CelObject, Limits, Program, Variables};

/// Why a target's template could not be rendered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// An expression failed; `field` is its path, e.g.
    /// `template.labelExprs[0].valueExpr`.
    #[error("{field}: {source}")]
    Expression {
        /// Path of the expression in the template.
        field: String,
        /// What went wrong.
        source: CelError,
    },
    /// The downstream repository is not among the supplied Repositories.
    #[error("repository {0:?} could not be loaded")]
    RepositoryNotLoaded(String),
}

/// Compiles (once per distinct source) and evaluates template expressions,
/// charging a shared budget.
#[derive(Debug)]
pub struct Evaluator {
    env: CelEnv,
    cache: HashMap<String, Result<Arc<Program>, CelError>>,
    budget: Budget,
    evaluations: usize,
}

impl Default for Evaluator {
    fn default() -> Self {
        Evaluator::new(Limits::default())
    }
}

impl Evaluator {
    /// An evaluator with `limits` and a fresh budget of
    /// [`Limits::max_render_cost`].
    pub fn new(limits: Limits) -> Self {
        Evaluator {
            env: CelEnv::new(limits),
            cache: HashMap::new(),
            budget: Budget::new(limits.max_render_cost),
            evaluations: 0,
        }
    }

    /// Evaluates `source` (compiled on first use) to a string.
    pub fn eval(&mut self, source: &str, vars: &Variables<'_>) -> Result<String, CelError> {
        let program = match self.cache.get(source) {
            Some(compiled) => compiled.clone()?,
            None => {
                let compiled = self.env.compile(source).map(Arc::new);
                self.cache.insert(source.to_string(), compiled.clone());
                compiled?
            }
        };
        self.evaluations += 1;
        self.env.eval(&program, vars, &mut self.budget)
    }

    /// How many distinct sources were compiled.
    pub fn compiled(&self) -> usize {
        self.cache.len()
    }

    /// How many evaluations were attempted.
    pub fn evaluations(&self) -> usize {
        self.evaluations
    }

    /// Estimated cost spent so far.
    pub fn cost_spent(&self) -> u64 {
        self.budget.spent()
    }

    fn field(
        &mut self,
        field: impl FnOnce() -> String,
        source: &str,
        vars: &Variables<'_>,
    ) -> Result<String, TemplateError> {
        self.eval(source, vars)
            .map_err(|source| TemplateError::Expression {
                field: field(),
                source,
            })
    }
}

/// The Repositories templates may load, by name (the first of a name wins,
/// as upstream). The CEL value of the last one loaded is kept, so targets
/// of one repository entry (several package names) convert it once, while
/// a render over thousands of repositories frees each value as it goes.
#[derive(Debug)]
pub struct RepositoryIndex<'a> {
    repositories: &'a [Repository],
    by_name: HashMap<&'a str, usize>,
    current: Option<(usize, CelObject<'a>)>,
}

impl<'a> RepositoryIndex<'a> {
    /// Indexes the repositories of namespace `namespace` (see
    /// [`in_namespace`]).
    pub fn new(repositories: &'a [Repository], namespace: &str) -> Self {
        let mut by_name = HashMap::with_capacity(repositories.len());
        for (i, r) in repositories.iter().enumerate() {
            if in_namespace(&r.metadata.namespace, namespace) {
                by_name.entry(r.metadata.name.as_str()).or_insert(i);
            }
        }
        RepositoryIndex {
            repositories,
            by_name,
            current: None,
        }
    }

    /// Whether a Repository of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    fn get(&mut self, name: &str) -> Option<&CelObject<'a>> {
        let i = *self.by_name.get(name)?;
        if self.current.as_ref().is_none_or(|(c, _)| *c != i) {
            let repository = self.repositories.get(i)?;
            self.current = Some((i, CelObject::from_meta(&repository.metadata)));
        }
        self.current.as_ref().map(|(_, o)| o)
    }
}

/// Renders the PackageVariant spec of `target`. `upstream` is the set's
/// `spec.upstream` (copied verbatim) and `upstream_input` the reduced
/// upstream PackageRevision.
pub fn render_spec(
    upstream: Option<&Upstream>,
    upstream_input: &CelObject,
    target: &UnrolledTarget<'_>,
    repositories: &mut RepositoryIndex<'_>,
    evaluator: &mut Evaluator,
) -> Result<PackageVariantSpec, TemplateError> {
    let mut spec = PackageVariantSpec {
        upstream: upstream.cloned(),
        downstream: Some(Downstream {
            repo: target.repo_default.clone(),
            package: target.package_default.clone(),
        }),
        ..PackageVariantSpec::default()
    };
    let Some(t) = target.template else {
        return Ok(spec);
    };
    // `target` is converted only for templates that can refer to it.
    let target_value = mentions_target(t).then(|| match &target.object {
        Some(obj) => CelObject::object(obj),
        None => CelObject::target_defaults(&target.repo_default, &target.package_default),
    });
    let mut vars = Variables {
        repo_default: &target.repo_default,
        package_default: &target.package_default,
        upstream: Some(upstream_input),
        target: target_value.as_ref(),
        repository: None,
    };

    let mut repo = target.repo_default.clone();
    if let Some(ds) = &t.downstream {
        if let Some(r) = ds.repo.as_deref().filter(|r| !r.is_empty()) {
            repo = r.to_string();
        }
        if let Some(e) = ds.repo_expr.as_deref().filter(|e| !e.is_empty()) {
            repo = evaluator.field(|| "template.downstream.repoExpr".into(), e, &vars)?;
        }
    }
    let Some(repository) = repositories.get(&repo) else {
        return Err(TemplateError::RepositoryNotLoaded(repo));
    };
    vars.repository = Some(repository);
    let downstream = spec.downstream.get_or_insert_with(Downstream::default);
    downstream.repo = repo;

    if let Some(ds) = &t.downstream {
        if let Some(p) = ds.package.as_deref().filter(|p| !p.is_empty()) {
            downstream.package = p.to_string();
        }
        if let Some(e) = ds.package_expr.as_deref().filter(|e| !e.is_empty()) {
            downstream.package =
                evaluator.field(|| "template.downstream.packageExpr".into(), e, &vars)?;
        }
    }
    if let Some(p) = &t.adoption_policy {
        spec.adoption_policy = p.clone();
    }
    if let Some(p) = &t.deletion_policy {
        spec.deletion_policy = p.clone();
    }
    spec.labels = overlay_map(
        "template.labelExprs",
        &t.labels,
        &t.label_exprs,
        &vars,
        evaluator,
    )?;
    spec.annotations = overlay_map(
        "template.annotationExprs",
        &t.annotations,
        &t.annotation_exprs,
        &vars,
        evaluator,
    )?;
    if let Some(pc) = &t.package_context {
        let data = overlay_map(
            "template.packageContext.dataExprs",
            &pc.data,
            &pc.data_exprs,
            &vars,
            evaluator,
        )?;
        let mut keys: BTreeSet<String> = pc.remove_keys.iter().cloned().collect();
        for (i, e) in pc.remove_key_exprs.iter().enumerate() {
            keys.insert(evaluator.field(
                || format!("template.packageContext.removeKeyExprs[{i}]"),
                e,
                &vars,
            )?);
        }
        spec.package_context = Some(PackageContext {
            data,
            remove_keys: keys.into_iter().collect(),
        });
    }
    for (i, inj) in t.injectors.iter().enumerate() {
        let mut name = inj
            .name
            .as_deref()
            .filter(|n| !n.is_empty())
            .unwrap_or_default()
            .to_string();
        if let Some(e) = inj.name_expr.as_deref().filter(|e| !e.is_empty()) {
            name = evaluator.field(|| format!("template.injectors[{i}].nameExpr"), e, &vars)?;
        }
        spec.injectors.push(InjectionSelector {
            group: inj.group.clone(),
            version: inj.version.clone(),
            kind: inj.kind.clone(),
            name,
        });
    }
    if let Some(p) = &t.pipeline {
        let pipeline = Pipeline {
            validators: render_functions(
                "template.pipeline.validators",
                &p.validators,
                &vars,
                evaluator,
            )?,
            mutators: render_functions(
                "template.pipeline.mutators",
                &p.mutators,
                &vars,
                evaluator,
            )?,
        };
        if !pipeline.is_empty() {
            spec.pipeline = Some(pipeline);
        }
    }
    Ok(spec)
}

/// Whether any expression of `t` contains the word `target` (a cheap,
/// conservative test: an expression that refers to the variable does).
fn mentions_target(t: &PackageVariantTemplate) -> bool {
    let hit = |e: &Option<String>| {
        e.as_deref()
            .is_some_and(|s| s.contains(crate::krm::cel::TARGET_VAR))
    };
    let map_hit = |m: &MapExpr| hit(&m.key_expr) || hit(&m.value_expr);
    t.downstream
        .as_ref()
        .is_some_and(|d| hit(&d.repo_expr) || hit(&d.package_expr))
        || t.label_exprs.iter().any(map_hit)
        || t.annotation_exprs.iter().any(map_hit)
        || t.package_context.as_ref().is_some_and(|pc| {
            pc.data_exprs.iter().any(map_hit)
                || pc
                    .remove_key_exprs
                    .iter()
                    .any(|e| e.contains(crate::krm::cel::TARGET_VAR))
        })
        || t.injectors.iter().any(|i| hit(&i.name_expr))
        || t.pipeline.as_ref().is_some_and(|p| {
            p.validators
                .iter()
                .chain(&p.mutators)
                .any(|f| f.config_map_exprs.iter().any(map_hit))
        })
}

fn render_functions(
    field: &str,
    templates: &[FunctionTemplate],
    vars: &Variables<'_>,
    evaluator: &mut Evaluator,
) -> Result<Vec<Function>, TemplateError> {
    let mut out = Vec::with_capacity(templates.len());
    for (i, ft) in templates.iter().enumerate() {
        let mut f = ft.function.clone();
        f.config_map = overlay_map(
            &format!("{field}[{i}].configMapExprs"),
            &ft.function.config_map,
            &ft.config_map_exprs,
            vars,
            evaluator,
        )?;
        out.push(f);
    }
    Ok(out)
}

/// `copyAndOverlayMapExpr`: a copy of `base`, then for each entry in order
/// `key` (or the value of `keyExpr`) set to `value` (or the value of
/// `valueExpr`), a missing one being `""`. Errors are
/// `<field>[i].keyExpr: …` / `<field>[i].valueExpr: …`.
pub fn overlay_map(
    field: &str,
    base: &BTreeMap<String, String>,
    exprs: &[MapExpr],
    vars: &Variables<'_>,
    evaluator: &mut Evaluator,
) -> Result<BTreeMap<String, String>, TemplateError> {
    let mut out = base.clone();
    for (i, me) in exprs.iter().enumerate() {
        let mut k = me.key.clone().unwrap_or_default();
        if let Some(e) = &me.key_expr {
            k = evaluator.field(|| format!("{field}[{i}].keyExpr"), e, vars)?;
        }
        let mut v = me.value.clone().unwrap_or_default();
        if let Some(e) = &me.value_expr {
            v = evaluator.field(|| format!("{field}[{i}].valueExpr"), e, vars)?;
        }
        out.insert(k, v);
    }
    Ok(out)
}
