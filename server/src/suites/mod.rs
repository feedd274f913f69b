//! Assistant tests (issue #46): suites of conversations with expectations,
//! replayed against the workspace's model, prompt, knowledge and tools so
//! a host proves a change safe before its visitors meet it.
//!
//! - [`format`]: a suite as written (YAML or JSON), promptfoo's assertion
//!   names read beside ours;
//! - [`expect`]: what a step did, and the expectations checked against it;
//! - [`language`]: the language a reply is in;
//! - [`report`]: a run's results as JSON, JUnit XML and text;
//! - [`capture`]: a conversation saved as a case (the console's **Save as test**);
//! - [`cli`]: `context-assistant test`.
//!
//! The runs themselves go through the server's engine in test mode
//! (`api::test_runner`): tools safe by construction, nothing counted
//! against the visitors' limits.

pub mod capture;
pub mod cli;
pub mod expect;
pub mod format;
pub mod language;
pub mod report;

pub use format::{Suite, parse};
pub use report::RunReport;
