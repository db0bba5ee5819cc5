//! `render-package-variant-set`: a kpt function (`kpt fn eval --exec`) whose
//! functionConfig is a PackageVariantSet; it writes the set's
//! PackageVariants into the package. See `functions/README.md`.

use porch_variants_functions::{main_with, Function};

fn main() {
    let code = main_with(
        Function::RenderPackageVariantSet,
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
