//! Per-flow transport state (layer 3): the window transport's sender and receiver, and the token
//! transport's held tokens and grants.

pub mod flow;
pub mod token;
