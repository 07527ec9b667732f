pub mod compare;
pub mod manifest;
