use super::*;

fn job() -> Value {
    let mut job = json!({
        "metadata": {"name": "pi", "uid": "u-1"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl"}]}}}
    });
    JobStrategy.prepare_for_create(&mut job);
    JobStrategy.default(&mut job);
    job
}

fn messages(errs: ErrorList) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn generated_selector_and_defaults() {
    let j = job();
    assert_eq!(
        j["spec"]["selector"],
        json!({"matchLabels": {CONTROLLER_UID: "u-1"}})
    );
    let labels = &j["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels[LEGACY_JOB_NAME], "pi");
    assert_eq!(labels[JOB_NAME], "pi");
    assert_eq!(labels[LEGACY_CONTROLLER_UID], "u-1");
    assert_eq!(j["metadata"]["labels"], *labels);
    let spec = &j["spec"];
    assert_eq!(
        (spec["completions"].clone(), spec["parallelism"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(spec["backoffLimit"], 6);
    assert_eq!(spec["completionMode"], "NonIndexed");
    assert_eq!(spec["suspend"], false);
    assert_eq!(spec["podReplacementPolicy"], "TerminatingOrFailed");
    assert!(
        JobStrategy.validate(&j).is_empty(),
        "{:?}",
        JobStrategy.validate(&j)
    );
}

#[test]
fn manual_selector_is_kept_and_must_match() {
    let mut j = json!({
        "metadata": {"name": "m", "uid": "u"},
        "spec": {"manualSelector": true, "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "y"}}, "spec": {"restartPolicy": "OnFailure",
                "containers": [{"name": "c", "image": "i"}]}}}
    });
    JobStrategy.prepare_for_create(&mut j);
    JobStrategy.default(&mut j);
    assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"app": "x"}}));
    assert_eq!(
        messages(JobStrategy.validate(&j)),
        vec!["spec.template.metadata.labels: Invalid value: {\"app\":\"y\"}: `selector` does not match template `labels`"]
    );
}

#[test]
fn restart_policy_and_counts() {
    let mut j = job();
    j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    j["spec"]["parallelism"] = json!(-1);
    j["spec"]["backoffLimitPerIndex"] = json!(2);
    assert_eq!(
        messages(JobStrategy.validate(&j)),
        vec![
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            "spec.backoffLimitPerIndex: Invalid value: 2: requires indexed completion mode",
            "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
        ]
    );
}

#[test]
fn wrong_generated_labels() {
    let mut j = job();
    j["spec"]["template"]["metadata"]["labels"][LEGACY_JOB_NAME] = json!("other");
    let got = messages(JobStrategy.validate(&j));
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("spec.template.metadata.labels[job-name]: Invalid value: "));
    assert!(got[0].ends_with(": must be 'pi'"));
}

#[test]
fn update_immutability() {
    let old = job();
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("perl:2");
    new["spec"]["completions"] = json!(3);
    new["spec"]["selector"]["matchLabels"]["x"] = json!("y");
    let got = messages(JobStrategy.validate_update(&new, &old));
    let fields: Vec<&str> = got.iter().map(|m| m.split(':').next().unwrap()).collect();
    // The changed selector also fails the generated-selector and template rules.
    assert_eq!(
        fields,
        vec![
            "spec.selector",
            "spec.template.metadata.labels",
            "spec.completions",
            "spec.selector",
            "spec.template"
        ]
    );
    assert!(got[2..].iter().all(|m| m.ends_with("field is immutable")));
    // Parallelism and suspend stay mutable.
    let mut ok = old.clone();
    ok["spec"]["parallelism"] = json!(4);
    ok["spec"]["suspend"] = json!(true);
    assert!(JobStrategy.validate_update(&ok, &old).is_empty());
}

#[test]
fn suspended_unstarted_jobs_may_change_scheduling() {
    let mut old = job();
    old["spec"]["suspend"] = json!(true);
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
    new["spec"]["template"]["metadata"]["annotations"] = json!({"x": "y"});
    assert!(JobStrategy.validate_update(&new, &old).is_empty());
    old["status"] = json!({"startTime": "2024-01-01T00:00:00Z"});
    assert_eq!(JobStrategy.validate_update(&new, &old).len(), 1);
}

#[test]
fn indexed_rules() {
    let mut j = job();
    j["spec"]["completionMode"] = json!("Indexed");
    j["spec"]["completions"] = json!(3);
    j["spec"]["maxFailedIndexes"] = json!(5);
    j["spec"]["backoffLimitPerIndex"] = json!(1);
    assert_eq!(
        messages(JobStrategy.validate(&j)),
        vec!["spec.maxFailedIndexes: Invalid value: 5: must be less than or equal to completions"]
    );
}

#[test]
fn pod_failure_policy_rules() {
    let mut j = job();
    j["spec"]
        .as_object_mut()
        .unwrap()
        .remove("podReplacementPolicy");
    j["spec"]["podFailurePolicy"] = json!({"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [3, 1, 0]}},
        {"action": "Explode", "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]});
    JobStrategy.default(&mut j);
    assert_eq!(
        j["spec"]["podFailurePolicy"]["rules"][1]["onPodConditions"][0]["status"],
        "True"
    );
    assert_eq!(j["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(
        messages(JobStrategy.validate(&j)),
        vec![
            "spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Invalid value: 0: must not be 0 for the In operator",
            "spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value: [3,1,0]: must be ordered",
            "spec.podFailurePolicy.rules[1].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\"",
        ]
    );
}

#[test]
fn table_cells() {
    let mut j = job();
    assert_eq!(
        JobStrategy.cells(&j)[1..4],
        [json!("Running"), json!("0/1"), json!("")]
    );
    j["status"] = json!({"succeeded": 1, "startTime": "2024-01-01T00:00:00Z",
        "completionTime": "2024-01-01T00:00:07Z",
        "conditions": [{"type": "Complete", "status": "True"}]});
    assert_eq!(
        JobStrategy.cells(&j)[1..4],
        [json!("Complete"), json!("1/1"), json!("7s")]
    );
    let mut queue = job();
    queue["spec"].as_object_mut().unwrap().remove("completions");
    queue["spec"]["parallelism"] = json!(3);
    assert_eq!(completions_cell(&queue), "0/1 of 3");
    assert_eq!(JobStrategy.columns().len(), JobStrategy.cells(&j).len());
    assert_eq!(
        JobStrategy.field_value(&j, "status.successful").as_deref(),
        Some("1")
    );
}
