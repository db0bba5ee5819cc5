//! `apply-package-variant`: a kpt function (`kpt fn eval --exec`) whose
//! functionConfig is a PackageVariant; it applies the variant's mutations to
//! the package. See `functions/README.md`.

use porch_variants_functions::{main_with, Function};

fn main() {
    let code = main_with(
        Function::ApplyPackageVariant,
        &mut std::io::stdin().lock(),
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    );
    std::process::exit(code);
}
