//! Results of a function, as render records them: the API's
//! [`ResultItem`](crate::api::ResultItem) under the name render's code
//! uses.

pub use crate::api::resource_list::{Field, FileRef, ResourceRef, ResultItem as FnResult};
