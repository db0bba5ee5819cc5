//! The three mutations Porch applies to a downstream package, in upstream's
//! order: package context, pipeline functions, config injection; and change
//! detection.
