//! A run's results: the JSON the API answers and `--json` writes, the
//! JUnit XML `--junit` writes for a CI's test report, and the text the
//! command line prints.

use serde::{Deserialize, Serialize};

/// A whole run of a suite.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct RunReport {
    /// The suite's name.
    pub suite: String,
    /// The model the run asked (its name), when one was named for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// How long the run took.
    pub duration_ms: u64,
    pub cases: Vec<CaseReport>,
}

/// One case, over its runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, utoipa::ToSchema)]
pub struct CaseReport {
    pub name: String,
    /// Whether its share of passing runs reached the share required.
    pub passed: bool,
    /// How often it ran.
    pub runs: u32,
    /// The share of its runs that passed (0 to 1).
    pub pass_rate: f64,
    /// The share required.
    pub required_rate: f64,
    /// What failed, run by run (`run 2, step 1: expected …; got …`).
    pub failures: Vec<String>,
    /// The mean time of its turns, in milliseconds.
    pub latency_ms: u64,
    /// The mean tokens of a run.
    pub tokens: u64,
    /// Its first failing run, step by step (else its first run).
    #[schema(value_type = Vec<Object>)]
    pub transcript: Vec<TranscriptEntry>,
}

/// One line of a run's transcript.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TranscriptEntry {
    /// The step it belongs to (from 1).
    pub step: usize,
    /// `user`, `assistant`, `tool`, `pending_action`, `applied`,
    /// `would_apply`, `cancelled`, `confirmed`, `answered`, `error`,
    /// `judge` or `failed` (an expectation of the step that failed).
    pub kind: String,
    pub text: String,
}

impl RunReport {
    /// Whether every case passed.
    pub fn ok(&self) -> bool {
        self.failed == 0 && !self.cases.is_empty()
    }

    /// What the command line prints: a line a case, the failures and the
    /// reply under a failed one, and the totals.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for case in &self.cases {
            let mark = if case.passed { "PASS" } else { "FAIL" };
            let rate = if case.runs > 1 {
                format!(
                    " ({:.0} % of {} runs, {:.0} % required)",
                    case.pass_rate * 100.0,
                    case.runs,
                    case.required_rate * 100.0
                )
            } else {
                String::new()
            };
            out.push_str(&format!("{mark}  {}{rate}  {} ms, {} tokens\n", case.name, case.latency_ms, case.tokens));
            if !case.passed {
                for failure in &case.failures {
                    out.push_str(&format!("      {failure}\n"));
                }
                if let Some(reply) = case.transcript.iter().rev().find(|e| e.kind == "assistant") {
                    let reply: String = reply.text.chars().take(400).collect();
                    out.push_str(&format!(
                        "      reply (step {}): {}\n",
                        case.transcript.last().map_or(0, |e| e.step),
                        reply.replace('\n', " ")
                    ));
                }
            }
        }
        let model = self.model.as_deref().map(|m| format!(" with {m}")).unwrap_or_default();
        out.push_str(&format!(
            "\n{}{model}: {} passed, {} failed ({:.1} s)\n",
            self.suite,
            self.passed,
            self.failed,
            self.duration_ms as f64 / 1000.0
        ));
        out
    }
}

/// JUnit XML of one run or more (one per model): a `<testsuite>` each,
/// one `<testcase>` a case, a `<failure>` with the reasons for a failed
/// one, the transcript as its `<system-out>`.
pub fn junit(reports: &[RunReport]) -> String {
    use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};
    let mut writer = quick_xml::Writer::new_with_indent(Vec::new(), b' ', 2);
    let seconds = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    let write = |writer: &mut quick_xml::Writer<Vec<u8>>, event: Event<'_>| {
        writer.write_event(event).expect("writing to memory does not fail");
    };
    write(&mut writer, Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)));
    let total = reports.iter().map(|r| r.cases.len()).sum::<usize>().to_string();
    let failed = reports.iter().map(|r| r.failed).sum::<usize>().to_string();
    let time = seconds(reports.iter().map(|r| r.duration_ms).sum());
    let mut suites = BytesStart::new("testsuites");
    suites.push_attribute(("name", "context-assistant"));
    suites.push_attribute(("tests", total.as_str()));
    suites.push_attribute(("failures", failed.as_str()));
    suites.push_attribute(("time", time.as_str()));
    write(&mut writer, Event::Start(suites));
    for report in reports {
        let tests = report.cases.len().to_string();
        let failures = report.failed.to_string();
        let time = seconds(report.duration_ms);
        let suite_name = xml_text(&match &report.model {
            Some(model) if reports.len() > 1 => format!("{} ({model})", report.suite),
            _ => report.suite.clone(),
        });
        let mut suite = BytesStart::new("testsuite");
        suite.push_attribute(("name", suite_name.as_str()));
        suite.push_attribute(("tests", tests.as_str()));
        suite.push_attribute(("failures", failures.as_str()));
        suite.push_attribute(("errors", "0"));
        suite.push_attribute(("skipped", "0"));
        suite.push_attribute(("time", time.as_str()));
        write(&mut writer, Event::Start(suite));
        for case in &report.cases {
            let name = xml_text(&case.name);
            let case_time = seconds(case.latency_ms.saturating_mul(u64::from(case.runs)));
            let mut testcase = BytesStart::new("testcase");
            testcase.push_attribute(("classname", suite_name.as_str()));
            testcase.push_attribute(("name", name.as_str()));
            testcase.push_attribute(("time", case_time.as_str()));
            write(&mut writer, Event::Start(testcase));
            if !case.passed {
                let message = xml_text(case.failures.first().map_or("failed", String::as_str));
                let mut failure = BytesStart::new("failure");
                failure.push_attribute(("message", message.as_str()));
                failure.push_attribute(("type", "expectation"));
                write(&mut writer, Event::Start(failure));
                let mut reasons = case.failures.join("\n");
                if case.runs > 1 {
                    reasons.push_str(&format!(
                        "\npassed {:.0} % of {} runs; {:.0} % required",
                        case.pass_rate * 100.0,
                        case.runs,
                        case.required_rate * 100.0
                    ));
                }
                write(&mut writer, Event::Text(BytesText::new(&xml_text(&reasons))));
                write(&mut writer, Event::End(BytesEnd::new("failure")));
            }
            let transcript: String =
                case.transcript.iter().map(|e| format!("[step {}] {}: {}\n", e.step, e.kind, e.text)).collect();
            write(&mut writer, Event::Start(BytesStart::new("system-out")));
            write(&mut writer, Event::Text(BytesText::new(&xml_text(&transcript))));
            write(&mut writer, Event::End(BytesEnd::new("system-out")));
            write(&mut writer, Event::End(BytesEnd::new("testcase")));
        }
        write(&mut writer, Event::End(BytesEnd::new("testsuite")));
    }
    write(&mut writer, Event::End(BytesEnd::new("testsuites")));
    let mut xml = String::from_utf8(writer.into_inner()).expect("written from strings");
    xml.push('\n');
    xml
}

/// `text` with the characters XML 1.0 cannot carry (controls but tab and
/// line breaks) left out; quick-xml escapes the rest.
fn xml_text(text: &str) -> String {
    text.chars().filter(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> RunReport {
        RunReport {
            suite: "bistro <&>".into(),
            model: None,
            passed: 1,
            failed: 1,
            duration_ms: 2500,
            cases: vec![
                CaseReport {
                    name: "menu".into(),
                    passed: true,
                    runs: 1,
                    pass_rate: 1.0,
                    required_rate: 1.0,
                    latency_ms: 120,
                    ..CaseReport::default()
                },
                CaseReport {
                    name: "adds \"two\"".into(),
                    passed: false,
                    runs: 3,
                    pass_rate: 2.0 / 3.0,
                    required_rate: 1.0,
                    failures: vec!["run 2, step 1: expected a call of add_to_cart; got no tool call\u{0}".into()],
                    latency_ms: 200,
                    tokens: 50,
                    transcript: vec![
                        TranscriptEntry { step: 1, kind: "user".into(), text: "add two <margheritas>".into() },
                        TranscriptEntry { step: 1, kind: "assistant".into(), text: "I can't & won't".into() },
                    ],
                },
            ],
        }
    }

    #[test]
    fn junit_is_well_formed_with_a_failure_a_failed_case() {
        let xml = junit(&[report()]);
        let mut reader = quick_xml::Reader::from_str(&xml);
        let (mut cases, mut failures, mut texts) = (Vec::new(), 0, String::new());
        loop {
            match reader.read_event().expect("well-formed") {
                quick_xml::events::Event::Start(e) if e.name().as_ref() == b"testcase" => {
                    let name = e
                        .try_get_attribute("name")
                        .unwrap()
                        .unwrap()
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .unwrap()
                        .into_owned();
                    cases.push(name);
                }
                quick_xml::events::Event::Start(e) if e.name().as_ref() == b"failure" => failures += 1,
                quick_xml::events::Event::Text(t) => texts.push_str(&t.decode().unwrap()),
                quick_xml::events::Event::Eof => break,
                _ => {}
            }
        }
        assert_eq!(cases, ["menu", "adds \"two\""]);
        assert_eq!(failures, 1);
        assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
        assert!(!xml.contains('\u{0}'), "no character XML cannot carry");
        assert!(xml.contains("&lt;margheritas&gt;"), "escaped: {xml}");
    }

    #[test]
    fn the_text_says_what_failed_and_the_totals() {
        let text = report().text();
        assert!(text.contains("PASS  menu"), "{text}");
        assert!(text.contains("FAIL  adds \"two\" (67 % of 3 runs, 100 % required)"), "{text}");
        assert!(text.contains("run 2, step 1: expected a call of add_to_cart"), "{text}");
        assert!(text.contains("reply (step 1): I can't & won't"), "{text}");
        assert!(text.contains("1 passed, 1 failed"), "{text}");
        assert!(!report().ok());
    }
}
