package fault

// ReasonDomain is the google.rpc.ErrorInfo domain of ptc's reasons.
const ReasonDomain = "ptc.v1"

// The reasons of request errors that callers branch on (Error.Reason,
// google.rpc.ErrorInfo.reason). They are part of the wire contract: a
// client library maps them to typed errors, so they never change
// meaning.
const (
	// ReasonContinuationMalformed: the continuation is empty, not
	// base64url, truncated, of an unknown version, too long, or corrupt
	// (INVALID_ARGUMENT).
	ReasonContinuationMalformed = "CONTINUATION_MALFORMED"
	// ReasonContinuationTampered: the continuation failed its signature
	// check: it was altered, or it is another server's (INVALID_ARGUMENT).
	ReasonContinuationTampered = "CONTINUATION_TAMPERED"
	// ReasonContinuationUnknownKey: the continuation is signed with a key
	// the server does not hold (INVALID_ARGUMENT).
	ReasonContinuationUnknownKey = "CONTINUATION_UNKNOWN_KEY"
	// ReasonContinuationWrongTenant: the continuation was issued to
	// another tenant (PERMISSION_DENIED).
	ReasonContinuationWrongTenant = "CONTINUATION_WRONG_TENANT"
	// ReasonContinuationExpired: the continuation expired
	// (FAILED_PRECONDITION).
	ReasonContinuationExpired = "CONTINUATION_EXPIRED"
	// ReasonContinuationUsed: the continuation resumed its execution
	// already (FAILED_PRECONDITION).
	ReasonContinuationUsed = "CONTINUATION_USED"
	// ReasonContinuationStateGone: the paused state the continuation
	// refers to is gone from the state store: resumed already, or expired
	// (FAILED_PRECONDITION).
	ReasonContinuationStateGone = "CONTINUATION_STATE_GONE"
	// ReasonContinuationNeedsStore: the continuation refers to a state
	// store this server does not have (FAILED_PRECONDITION).
	ReasonContinuationNeedsStore = "CONTINUATION_NEEDS_STORE"
	// ReasonAnswersInvalid: the answers of a Resume do not fit the pending
	// actions; the message names the call (INVALID_ARGUMENT).
	ReasonAnswersInvalid = "ANSWERS_INVALID"
	// ReasonResumableUnsupported: the server has no continuation keys
	// (FAILED_PRECONDITION).
	ReasonResumableUnsupported = "RESUMABLE_UNSUPPORTED"
	// ReasonModuleMissing: the server does not hold the WebAssembly module
	// named by its digest: send the module (FAILED_PRECONDITION).
	ReasonModuleMissing = "WASM_MODULE_MISSING"
	// ReasonResumeInProgress: the continuation is being resumed, with
	// the same answers, on another replica sharing the store, and that
	// resume has no outcome yet: retry shortly (UNAVAILABLE).
	ReasonResumeInProgress = "RESUME_IN_PROGRESS"
)
