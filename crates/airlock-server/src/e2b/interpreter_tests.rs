#![allow(clippy::unwrap_used)]

use super::*;
