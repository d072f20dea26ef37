package validation

import (
	"fmt"
	"strings"
	"time"
	// The time zones are built in, so that whether a change window's timeZone loads does not
	// depend on the zoneinfo of the machine or image that runs the server (or the agent, which
	// computes the windows): both answer alike everywhere.
	_ "time/tzdata"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gitops-service/gitops-service/pkg/apis/appstudio"
	"github.com/gitops-service/gitops-service/pkg/apis/fieldvalidation"
)

// The gates of an Environment (PromotionGate), its holds (EnvironmentHold) and the decisions on
// promotions into it (PromotionApproval) are named after, or name, the Environment: the same
// rule as an Environment's name (a DNS-1123 label) applies.

// VerificationServiceAccount is the ServiceAccount a verification Job's pods run as: the
// namespace's deployer (pkg/controller/deployer), which may do what the namespace's edit role
// allows and nothing else. The agent sets it on every verification Job.
const VerificationServiceAccount = "gitops-deployer"

// Bounds of a gate's settings.
const (
	maxRequiredApprovals = 10
	minWindowDuration    = time.Minute
	maxWindowDuration    = 168 * time.Hour
	maxSoakTime          = 24 * time.Hour
	minVerifyTimeout     = 10 * time.Second
	maxVerifyTimeout     = 24 * time.Hour
	// maxGatedPromotions bounds a gate's status: the agent keeps every promotion in progress
	// (one per Application and run at most) and the latest ten ended ones.
	maxGatedPromotions = 200
	// maxTextLength bounds the free text of reasons and comments, in characters.
	maxTextLength = 1024
)

// ValidatePromotionGate checks a PromotionGate on create.
func ValidatePromotionGate(obj *appstudio.PromotionGate) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel)
	return append(errs, validatePromotionGateSpec(&obj.Spec)...)
}

// ValidatePromotionGateUpdate checks a PromotionGate on update: a team edits its gates and
// freezes, so every field of the spec may change.
func ValidatePromotionGateUpdate(obj, old *appstudio.PromotionGate) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validatePromotionGateSpec(&obj.Spec)...)
}

func validatePromotionGateSpec(spec *appstudio.PromotionGateSpec) field.ErrorList {
	var errs field.ErrorList
	if a := spec.Approvals; a != nil {
		if a.Required < 1 || a.Required > maxRequiredApprovals {
			errs = append(errs, field.Invalid(specPath.Child("approvals", "required"), a.Required,
				fmt.Sprintf("must be between 1 and %d", maxRequiredApprovals)))
		}
	}
	windowsPath := specPath.Child("changeWindows")
	windows := sets.New[string]()
	for i := range spec.ChangeWindows {
		errs = append(errs, validateChangeWindow(&spec.ChangeWindows[i], windowsPath.Index(i), windows)...)
	}
	freezesPath := specPath.Child("freezes")
	freezes := sets.New[string]()
	for i, f := range spec.Freezes {
		idx := freezesPath.Index(i)
		errs = append(errs, uniqueName(idx.Child("name"), f.Name, freezes)...)
		errs = append(errs, requiredText(idx.Child("reason"), f.Reason)...)
		if f.Until.IsZero() {
			errs = append(errs, field.Required(idx.Child("until"), "when the freeze expires"))
		}
	}
	if s := spec.SoakTime; s != nil && (s.Duration < 0 || s.Duration > maxSoakTime) {
		errs = append(errs, field.Invalid(specPath.Child("soakTime"), s.Duration.String(),
			fmt.Sprintf("must be between 0s and %s", maxSoakTime)))
	}
	if v := spec.Verification; v != nil {
		errs = append(errs, validateVerification(v, specPath.Child("verification"))...)
	}
	return errs
}

// uniqueName checks the name of a list entry that is keyed by name: a DNS-1123 label, given
// once in the list (seen holds the names before it).
func uniqueName(fldPath *field.Path, name string, seen sets.Set[string]) field.ErrorList {
	errs := fieldvalidation.DNSLabel(fldPath, name, true)
	if name != "" && seen.Has(name) {
		errs = append(errs, field.Duplicate(fldPath, name))
	}
	seen.Insert(name)
	return errs
}

// requiredText checks a reason or comment: not empty, and at most maxTextLength characters.
func requiredText(fldPath *field.Path, value string) field.ErrorList {
	if strings.TrimSpace(value) == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return maxText(fldPath, value)
}

func maxText(fldPath *field.Path, value string) field.ErrorList {
	if utf8.RuneCountInString(value) > maxTextLength {
		e := field.TooLong(fldPath, "", maxTextLength)
		e.Detail = fmt.Sprintf("must have at most %d characters", maxTextLength)
		return field.ErrorList{e}
	}
	return nil
}

func validateChangeWindow(w *appstudio.ChangeWindow, fldPath *field.Path, seen sets.Set[string]) field.ErrorList {
	errs := uniqueName(fldPath.Child("name"), w.Name, seen)
	errs = append(errs, fieldvalidation.Enum(fldPath.Child("type"), w.Type, true, appstudio.ChangeWindowAllow, appstudio.ChangeWindowDeny)...)
	errs = append(errs, validateSchedule(fldPath.Child("schedule"), w.Schedule)...)
	if d := w.Duration.Duration; d < minWindowDuration || d > maxWindowDuration {
		errs = append(errs, field.Invalid(fldPath.Child("duration"), d.String(),
			fmt.Sprintf("must be between %s and %s", minWindowDuration, maxWindowDuration)))
	}
	return append(errs, validateTimeZone(fldPath.Child("timeZone"), w.TimeZone)...)
}

// validateSchedule accepts what a CronJob's schedule accepts (five fields, or a descriptor
// such as @daily), but neither a time zone in the expression (timeZone says it) nor @every,
// which fires at intervals from whenever it is read rather than at fixed times.
func validateSchedule(fldPath *field.Path, schedule string) field.ErrorList {
	s := strings.TrimSpace(schedule)
	switch {
	case s == "":
		return field.ErrorList{field.Required(fldPath, "a cron expression of five fields (minute hour day-of-month month day-of-week)")}
	case strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ="):
		return field.ErrorList{field.Invalid(fldPath, schedule, "must not name a time zone (TZ= or CRON_TZ=): set timeZone instead")}
	case strings.HasPrefix(s, "@every"):
		return field.ErrorList{field.Invalid(fldPath, schedule,
			"@every is not a window's schedule: a window opens at fixed times, given as five fields (minute hour day-of-month month day-of-week)")}
	}
	if _, err := cron.ParseStandard(s); err != nil {
		return field.ErrorList{field.Invalid(fldPath, schedule,
			"must be a cron expression of five fields (minute hour day-of-month month day-of-week): "+err.Error())}
	}
	return nil
}

// validateTimeZone accepts an IANA time zone, or empty for UTC. "Local" is refused as for a
// CronJob: it would be the zone of whichever machine reads it.
func validateTimeZone(fldPath *field.Path, tz string) field.ErrorList {
	if tz == "" {
		return nil
	}
	if strings.EqualFold(tz, "Local") {
		return field.ErrorList{field.Invalid(fldPath, tz, "must be an IANA time zone such as Europe/Paris (or empty for UTC), not the server's local zone")}
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return field.ErrorList{field.Invalid(fldPath, tz, "must be an IANA time zone such as Europe/Paris, or empty for UTC: "+err.Error())}
	}
	return nil
}

func validateVerification(v *appstudio.Verification, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t := v.Timeout; t != nil && (t.Duration < minVerifyTimeout || t.Duration > maxVerifyTimeout) {
		errs = append(errs, field.Invalid(fldPath.Child("timeout"), t.Duration.String(),
			fmt.Sprintf("must be between %s and %s", minVerifyTimeout, maxVerifyTimeout)))
	}
	podPath := fldPath.Child("jobTemplate", "spec", "template", "spec")
	pod := &v.JobTemplate.Spec.Template.Spec
	if len(pod.Containers) == 0 {
		errs = append(errs, field.Required(podPath.Child("containers"), "the verification's containers"))
	}
	// The pods run as the namespace's deployer: any other account could hold rights the gate's
	// editors do not have.
	const asDeployer = "the verification runs as the namespace's deployer: leave it empty (the agent sets it to " +
		VerificationServiceAccount + ") or set it to " + VerificationServiceAccount
	if sa := pod.ServiceAccountName; sa != "" && sa != VerificationServiceAccount {
		errs = append(errs, field.Forbidden(podPath.Child("serviceAccountName"), asDeployer))
	}
	if sa := pod.DeprecatedServiceAccount; sa != "" && sa != VerificationServiceAccount {
		errs = append(errs, field.Forbidden(podPath.Child("serviceAccount"), asDeployer))
	}
	errs = append(errs, fieldvalidation.Enum(podPath.Child("restartPolicy"), pod.RestartPolicy, false,
		corev1.RestartPolicyNever, corev1.RestartPolicyOnFailure)...)
	return errs
}

// ValidatePromotionGateStatusUpdate checks a write of a PromotionGate's status (the agent's).
func ValidatePromotionGateStatusUpdate(obj, old *appstudio.PromotionGate) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	p := statusPath.Child("promotions")
	if n := len(obj.Status.Promotions); n > maxGatedPromotions {
		errs = append(errs, field.TooMany(p, n, maxGatedPromotions))
	}
	for i, g := range obj.Status.Promotions {
		idx := p.Index(i)
		errs = append(errs, fieldvalidation.ObjectName(idx.Child("promotionRun"), g.PromotionRun, true)...)
		errs = append(errs, fieldvalidation.Enum(idx.Child("phase"), g.Phase, true,
			appstudio.GatePhaseWaiting, appstudio.GatePhaseDeploying, appstudio.GatePhaseVerifying, appstudio.GatePhasePassed,
			appstudio.GatePhaseRejected, appstudio.GatePhaseRolledBack, appstudio.GatePhaseStopped)...)
	}
	return errs
}

// ValidatePromotionApproval checks a PromotionApproval on create. Who made it (spec.username,
// uid, groups) is set by the server from the request, and whether that user may make it is
// decided by the server's authorizer: neither is checked here.
func ValidatePromotionApproval(obj *appstudio.PromotionApproval) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec := &obj.Spec
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("promotionRun"), spec.PromotionRun, true)...)
	errs = append(errs, fieldvalidation.DNSLabel(specPath.Child("environment"), spec.Environment, true)...)
	errs = append(errs, fieldvalidation.Enum(specPath.Child("decision"), spec.Decision, true,
		appstudio.ApprovalApprove, appstudio.ApprovalReject, appstudio.ApprovalOverride)...)
	comment := specPath.Child("comment")
	switch spec.Decision {
	case appstudio.ApprovalReject, appstudio.ApprovalOverride:
		if strings.TrimSpace(spec.Comment) == "" {
			errs = append(errs, field.Required(comment, fmt.Sprintf("a %s says why", spec.Decision)))
		} else {
			errs = append(errs, maxText(comment, spec.Comment)...)
		}
	default:
		errs = append(errs, maxText(comment, spec.Comment)...)
	}
	return errs
}

// ValidatePromotionApprovalUpdate checks a PromotionApproval on update: it is a record, so its
// spec never changes (its labels and annotations may).
func ValidatePromotionApprovalUpdate(obj, old *appstudio.PromotionApproval) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	if !apiequality.Semantic.DeepEqual(obj.Spec, old.Spec) {
		errs = append(errs, field.Forbidden(specPath, "a PromotionApproval is immutable"))
	}
	return errs
}

// ValidateEnvironmentHold checks an EnvironmentHold on create.
func ValidateEnvironmentHold(obj *appstudio.EnvironmentHold) field.ErrorList {
	errs := validateMeta(&obj.ObjectMeta, true, apimachineryvalidation.NameIsDNSLabel)
	return append(errs, validateEnvironmentHoldSpec(&obj.Spec)...)
}

// ValidateEnvironmentHoldUpdate checks an EnvironmentHold on update; its spec may change.
func ValidateEnvironmentHoldUpdate(obj, old *appstudio.EnvironmentHold) field.ErrorList {
	errs := validateMetaUpdate(&obj.ObjectMeta, &old.ObjectMeta)
	return append(errs, validateEnvironmentHoldSpec(&obj.Spec)...)
}

func validateEnvironmentHoldSpec(spec *appstudio.EnvironmentHoldSpec) field.ErrorList {
	errs := requiredText(specPath.Child("reason"), spec.Reason)
	errs = append(errs, fieldvalidation.ObjectName(specPath.Child("snapshot"), spec.Snapshot, false)...)
	return append(errs, fieldvalidation.ObjectName(specPath.Child("promotionRun"), spec.PromotionRun, false)...)
}
