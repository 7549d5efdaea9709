//! `--feature-gates`: kube-apiserver 1.33's feature gates, one row each
//! (`name|default|stage|locked`, their state at 1.33: the last of upstream's
//! versioned specs not newer than 1.33), parsed and checked as upstream's
//! feature gate does, and [`FeatureGates`], what was asked.
//!
//! Invariants: an unknown name stops the start (`unrecognized feature gate:
//! X`), so does setting a gate locked to its default to the other value;
//! setting a GA or deprecated gate is accepted with upstream's warning.
//! `AllAlpha`/`AllBeta` set every alpha/beta gate not set by name. The gates
//! kapi acts on are [`HONOURED`]; the others are accepted and change nothing
//! in kapi (named in the log when set).

use std::collections::BTreeMap;

use super::value::parse_bool;

/// The gates whose value changes what kapi does, and where.
pub const HONOURED: &[&str] = &[
    // Aggregated discovery v2beta1 is not served while on (kapi-server discovery).
    "AggregatedDiscoveryRemoveBetaType",
    // Consistent LISTs are served from the watch cache while on (kapi-registry).
    "ConsistentListFromCache",
    // `sendInitialEvents` watches are refused while off (kapi-server watch).
    "WatchList",
    // The `poststarthook/storage-readiness` check (kapi assemble), bounded by
    // `--storage-initialization-timeout`.
    "WatchCacheInitializationPostStartHook",
    // `--tracing-config-file` is refused while off, as upstream's
    // `TracingOptions.ApplyTo` (kapi serve, `otel::read`).
    "APIServerTracing",
];

/// One gate at 1.33.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub name: &'static str,
    pub default: bool,
    pub stage: &'static str,
    pub locked: bool,
}

/// The gates, parsed once.
pub fn gates() -> &'static [Gate] {
    static GATES: std::sync::OnceLock<Vec<Gate>> = std::sync::OnceLock::new();
    GATES.get_or_init(|| {
        TABLE
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let c: Vec<&'static str> = l.split('|').collect();
                Gate {
                    name: c[0],
                    default: c[1] == "true",
                    stage: c[2],
                    locked: c[3] == "locked",
                }
            })
            .collect()
    })
}

/// The gates' values after `--feature-gates`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureGates {
    set: BTreeMap<&'static str, bool>,
    /// Warnings upstream logs for what was set (GA or deprecated gates).
    pub warnings: Vec<String>,
}

impl FeatureGates {
    /// Parse every `--feature-gates` value (`[kube:]Name=bool`, comma-separated).
    pub fn parse(values: &[String]) -> Result<FeatureGates, String> {
        let mut out = FeatureGates::default();
        let mut all: Vec<(&str, bool)> = Vec::new();
        for value in values {
            for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (key, v) = pair
                    .split_once('=')
                    .ok_or_else(|| format!("missing bool value for {pair}"))?;
                let name = match key.trim().split_once(':') {
                    Some(("kube" | "", name)) => name,
                    Some((component, _)) => {
                        return Err(format!("component not registered: {component}"))
                    }
                    None => key.trim(),
                };
                let on = parse_bool(v.trim())
                    .map_err(|e| format!("invalid value of {name}={}, err: {e}", v.trim()))?;
                if let Some(special) = ["AllAlpha", "AllBeta"].iter().find(|s| **s == name) {
                    all.push((special, on));
                    continue;
                }
                out.set_one(name, on)?;
            }
        }
        for (special, on) in all {
            let stage = if special == "AllAlpha" {
                "Alpha"
            } else {
                "Beta"
            };
            for g in gates().iter().filter(|g| g.stage == stage && !g.locked) {
                out.set.entry(g.name).or_insert(on);
            }
        }
        Ok(out)
    }

    fn set_one(&mut self, name: &str, on: bool) -> Result<(), String> {
        let gate = gates()
            .iter()
            .find(|g| g.name == name)
            .ok_or_else(|| format!("unrecognized feature gate: {name}"))?;
        if gate.locked && gate.default != on {
            return Err(format!(
                "cannot set feature gate {name} to {on}, feature is locked to {}",
                gate.default
            ));
        }
        match gate.stage {
            "GA" => self.warnings.push(format!(
                "Setting GA feature gate {name}={on}. It will be removed in a future release."
            )),
            "Deprecated" => self.warnings.push(format!(
                "Setting deprecated feature gate {name}={on}. It will be removed in a future release."
            )),
            _ => {}
        }
        self.set.insert(gate.name, on);
        Ok(())
    }

    /// Whether `name` is on (its default unless set).
    pub fn enabled(&self, name: &str) -> bool {
        match self.set.get(name) {
            Some(on) => *on,
            None => {
                gates()
                    .iter()
                    .find(|g| g.name == name)
                    .unwrap_or_else(|| panic!("feature gate {name} is not in the table"))
                    .default
            }
        }
    }

    /// The gates set that kapi does not act on.
    pub fn without_effect(&self) -> Vec<&'static str> {
        self.set
            .keys()
            .filter(|n| !HONOURED.contains(n))
            .copied()
            .collect()
    }
}

/// name|default at 1.33|stage|locked
const TABLE: &str = "
AggregatedDiscoveryRemoveBetaType|true|Deprecated|
AllowDNSOnlyNodeCSR|false|Deprecated|
AllowInsecureKubeletCertificateSigningRequests|false|Deprecated|
AllowOverwriteTerminationGracePeriodSeconds|false|Deprecated|
AllowParsingUserUIDFromCertAuth|true|Beta|
AllowServiceLBStatusOnNonLB|false|Deprecated|locked
AllowUnsafeMalformedObjectDeletion|false|Alpha|
AnonymousAuthConfigurableEndpoints|true|Beta|
AnyVolumeDataSource|true|GA|locked
APIResponseCompression|true|Beta|
APIServerIdentity|true|Beta|
APIServerTracing|true|Beta|
APIServingWithRoutine|false|Alpha|
AuthorizeNodeWithSelectors|true|Beta|
AuthorizeWithSelectors|true|Beta|
BtreeWatchCache|true|GA|locked
CBORServingAndStorage|false|Alpha|
ClientsAllowCBOR|false|Alpha|
ClientsPreferCBOR|false|Alpha|
CloudControllerManagerWebhook|false|Alpha|
ClusterTrustBundle|false|Beta|
ClusterTrustBundleProjection|false|Beta|
ComponentFlagz|false|Alpha|
ComponentSLIs|true|GA|locked
ComponentStatusz|false|Alpha|
ConcurrentWatchObjectDecode|false|Beta|
ConsistentListFromCache|true|Beta|
ContainerCheckpoint|true|Beta|
ContainerStopSignals|false|Alpha|
ContextualLogging|true|Beta|
CoordinatedLeaderElection|false|Beta|
CPUCFSQuotaPeriod|false|Alpha|
CPUManagerPolicyAlphaOptions|false|Alpha|
CPUManagerPolicyBetaOptions|true|Beta|
CPUManagerPolicyOptions|true|GA|locked
CRDValidationRatcheting|true|GA|locked
CronJobsScheduledAnnotation|true|GA|locked
CrossNamespaceVolumeDataSource|false|Alpha|
CSIMigrationPortworx|true|GA|locked
CSIVolumeHealth|false|Alpha|
CustomResourceFieldSelectors|true|GA|locked
DeclarativeValidation|true|Beta|
DeclarativeValidationTakeover|false|Beta|
DeploymentReplicaSetTerminatingReplicas|false|Alpha|
DevicePluginCDIDevices|true|GA|locked
DisableAllocatorDualWrite|false|Beta|
DisableCPUQuotaWithExclusiveCPUs|true|Beta|
DisableNodeKubeProxyVersion|true|Deprecated|
DRAAdminAccess|false|Alpha|
DRADeviceTaints|false|Alpha|
DRAPartitionableDevices|false|Alpha|
DRAPrioritizedList|false|Alpha|
DRAResourceClaimDeviceStatus|true|Beta|
DynamicResourceAllocation|false|Beta|
EventedPLEG|false|Alpha|
ExecProbeTimeout|true|GA|
ExternalServiceAccountTokenSigner|false|Alpha|
GitRepoVolumeDriver|false|Deprecated|
GracefulNodeShutdown|true|Beta|
GracefulNodeShutdownBasedOnPodPriority|true|Beta|
HonorPVReclaimPolicy|true|GA|locked
HPAConfigurableTolerance|false|Alpha|
HPAScaleToZero|false|Alpha|
ImageMaximumGCAge|true|Beta|
ImageVolume|false|Beta|
InformerResourceVersion|false|Alpha|
InPlacePodVerticalScaling|true|Beta|
InPlacePodVerticalScalingAllocatedStatus|false|Deprecated|
InPlacePodVerticalScalingExclusiveCPUs|false|Alpha|
InTreePluginPortworxUnregister|false|Alpha|
JobBackoffLimitPerIndex|true|GA|locked
JobManagedBy|true|Beta|
JobPodReplacementPolicy|true|Beta|
JobSuccessPolicy|true|GA|locked
KMSv1|false|Deprecated|
KubeletCgroupDriverFromCRI|true|Beta|
KubeletCrashLoopBackOffMax|false|Alpha|
KubeletEnsureSecretPulledImages|false|Alpha|
KubeletFineGrainedAuthz|true|Beta|
KubeletInUserNamespace|false|Alpha|
KubeletPodResourcesDynamicResources|false|Alpha|
KubeletPodResourcesGet|false|Alpha|
KubeletPodResourcesListUseActivePods|false|GA|
KubeletPSI|false|Alpha|
KubeletRegistrationGetOnExistsOnly|false|Deprecated|
KubeletSeparateDiskGC|true|Beta|
KubeletServiceAccountTokenForCredentialProviders|false|Alpha|
KubeletTracing|true|Beta|
LegacySidecarContainers|false|Deprecated|
ListFromCacheSnapshot|false|Alpha|
LoadBalancerIPMode|true|GA|locked
LocalStorageCapacityIsolationFSQuotaMonitoring|false|Beta|
LogarithmicScaleDown|true|GA|locked
LoggingAlphaOptions|false|Alpha|
LoggingBetaOptions|true|Beta|
MatchLabelKeysInPodAffinity|true|GA|locked
MatchLabelKeysInPodTopologySpread|true|Beta|
MaxUnavailableStatefulSet|false|Alpha|
MemoryManager|true|GA|locked
MemoryQoS|false|Alpha|
MultiCIDRServiceAllocator|true|GA|
MutableCSINodeAllocatableCount|false|Alpha|
MutatingAdmissionPolicy|false|Alpha|
NFTablesProxyMode|true|GA|locked
NodeInclusionPolicyInPodTopologySpread|true|GA|locked
NodeLogQuery|false|Beta|
NodeSwap|true|Beta|
OpenAPIEnums|true|Beta|
OrderedNamespaceDeletion|true|Beta|
PodAndContainerStatsFromCRI|false|Alpha|
PodDeletionCost|true|Beta|
PodDisruptionConditions|true|GA|locked
PodIndexLabel|true|GA|locked
PodLevelResources|false|Alpha|
PodLifecycleSleepAction|true|Beta|
PodLifecycleSleepActionAllowZero|true|Beta|
PodLogsQuerySplitStreams|false|Alpha|
PodObservedGenerationTracking|false|Alpha|
PodReadyToStartContainersCondition|true|Beta|
PodSchedulingReadiness|true|GA|locked
PodTopologyLabelsAdmission|false|Alpha|
PortForwardWebsockets|true|Beta|
PreferSameTrafficDistribution|false|Alpha|
ProcMountType|true|Beta|
QOSReserved|false|Alpha|
RecoverVolumeExpansionFailure|true|Beta|
RecursiveReadOnlyMounts|true|GA|locked
ReduceDefaultCrashLoopBackOffDecay|false|Alpha|
RelaxedDNSSearchValidation|true|Beta|
RelaxedEnvironmentVariableValidation|true|Beta|
ReloadKubeletServerCertificateFile|true|Beta|
RemoteRequestHeaderUID|true|Beta|
ResilientWatchCacheInitialization|true|Beta|
ResourceHealthStatus|false|Alpha|
RetryGenerateName|true|GA|locked
RotateKubeletServerCertificate|true|Beta|
RuntimeClassInImageCriAPI|false|Alpha|
SchedulerAsyncPreemption|true|Beta|
SchedulerPopFromBackoffQ|true|Beta|
SchedulerQueueingHints|true|Beta|
SELinuxChangePolicy|true|Beta|
SELinuxMount|false|Beta|
SELinuxMountReadWriteOncePod|true|Beta|
SeparateCacheWatchRPC|false|Deprecated|
SeparateTaintEvictionController|true|Beta|
ServiceAccountNodeAudienceRestriction|true|Beta|
ServiceAccountTokenJTI|true|GA|locked
ServiceAccountTokenNodeBinding|true|GA|locked
ServiceAccountTokenNodeBindingValidation|true|GA|locked
ServiceAccountTokenPodNodeInfo|true|GA|locked
ServiceTrafficDistribution|true|GA|locked
SidecarContainers|true|GA|locked
SizeMemoryBackedVolumes|true|GA|locked
StatefulSetAutoDeletePVC|true|GA|locked
StorageCapacityScoring|false|Alpha|
StorageNamespaceIndex|true|Deprecated|
StorageVersionAPI|false|Alpha|
StorageVersionHash|true|Beta|
StorageVersionMigrator|false|Alpha|
StreamingCollectionEncodingToJSON|true|Beta|
StreamingCollectionEncodingToProtobuf|true|Beta|
StrictCostEnforcementForVAP|true|GA|locked
StrictCostEnforcementForWebhooks|true|GA|locked
StrictIPCIDRValidation|false|Alpha|
StructuredAuthenticationConfiguration|true|Beta|
StructuredAuthorizationConfiguration|true|GA|locked
SupplementalGroupsPolicy|true|Beta|
SystemdWatchdog|true|Beta|
TopologyAwareHints|true|GA|locked
TopologyManagerPolicyAlphaOptions|false|Alpha|
TopologyManagerPolicyBetaOptions|true|Beta|
TopologyManagerPolicyOptions|true|GA|
TranslateStreamCloseWebsocketRequests|true|Beta|
UnauthenticatedHTTP2DOSMitigation|true|Beta|
UnknownVersionInteroperabilityProxy|false|Alpha|
UserNamespacesPodSecurityStandards|false|Alpha|
UserNamespacesSupport|true|Beta|
VolumeAttributesClass|false|Beta|
WatchCacheInitializationPostStartHook|false|Beta|
WatchFromStorageWithoutResourceVersion|false|Deprecated|locked
WatchList|false|Beta|
WatchListClient|false|Beta|
WindowsCPUAndMemoryAffinity|false|Alpha|
WindowsGracefulNodeShutdown|false|Alpha|
WindowsHostNetwork|false|Deprecated|
WinDSR|true|Beta|
WinOverlay|true|Beta|
";

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Result<FeatureGates, String> {
        FeatureGates::parse(&[v.to_string()])
    }

    #[test]
    fn gates_parse_and_check_as_upstream() {
        assert_eq!(
            parse("Foo=true").unwrap_err(),
            "unrecognized feature gate: Foo"
        );
        assert_eq!(
            parse("CustomResourceFieldSelectors=false").unwrap_err(),
            "cannot set feature gate CustomResourceFieldSelectors to false, feature is locked to true"
        );
        let g = parse("kube:WatchList=true, ConsistentListFromCache=false").unwrap();
        assert!(g.enabled("WatchList"));
        assert!(!g.enabled("ConsistentListFromCache"));
        assert!(g.enabled("AggregatedDiscoveryRemoveBetaType"));
        let g = parse("AllBeta=false").unwrap();
        assert!(!g.enabled("ConsistentListFromCache"));
        assert!(parse("WatchList=maybe")
            .unwrap_err()
            .starts_with("invalid value of WatchList=maybe"));
        let g = parse("AggregatedDiscoveryRemoveBetaType=false").unwrap();
        assert_eq!(g.warnings.len(), 1);
        for gate in HONOURED {
            assert!(gates().iter().any(|g| g.name == *gate), "{gate}");
        }
        let mut names: Vec<&str> = gates().iter().map(|g| g.name).collect();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "names are unique");
    }
}
