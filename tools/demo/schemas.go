package demo

// The tools' JSON Schemas (draft 2020-12). Enums here must list exactly the
// values of departmentNames, levelNames, quarterNames and categoryNames; the
// tests check that they do.
const (
	teamMembersInput = `{
  "type": "object",
  "properties": {
    "department": {
      "type": "string",
      "enum": ["engineering", "sales", "marketing", "support"],
      "description": "The department whose members to list."
    }
  },
  "required": ["department"],
  "additionalProperties": false
}`

	teamMembersOutput = `{
  "type": "array",
  "items": {
    "type": "object",
    "properties": {
      "id": {"type": "string", "pattern": "^[a-z]{3}-[0-9]{2}$", "description": "The member id, e.g. eng-07."},
      "name": {"type": "string", "minLength": 1},
      "level": {"type": "string", "enum": ["junior", "mid", "senior", "staff", "principal"]}
    },
    "required": ["id", "name", "level"],
    "additionalProperties": false
  }
}`

	expensesInput = `{
  "type": "object",
  "properties": {
    "member_id": {
      "type": "string",
      "minLength": 1,
      "maxLength": 64,
      "description": "A member id returned by get_team_members, e.g. eng-07."
    },
    "quarter": {
      "type": "string",
      "enum": ["Q1", "Q2", "Q3", "Q4"],
      "description": "The quarter of 2026."
    }
  },
  "required": ["member_id", "quarter"],
  "additionalProperties": false
}`

	expensesOutput = `{
  "type": "array",
  "items": {
    "type": "object",
    "properties": {
      "id": {"type": "string", "minLength": 1},
      "date": {
        "type": "string",
        "pattern": "^2026-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])$",
        "description": "The date of the expense, YYYY-MM-DD."
      },
      "category": {
        "type": "string",
        "enum": ["travel", "meals", "lodging", "software", "hardware", "training", "office", "communications"]
      },
      "amount": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01, "description": "The amount, with two decimals."},
      "currency": {"type": "string", "enum": ["USD"]}
    },
    "required": ["id", "date", "category", "amount", "currency"],
    "additionalProperties": false
  }
}`

	budgetInput = `{
  "type": "object",
  "properties": {
    "level": {
      "type": "string",
      "enum": ["junior", "mid", "senior", "staff", "principal"],
      "description": "The job level."
    }
  },
  "required": ["level"],
  "additionalProperties": false
}`

	budgetOutput = `{
  "type": "object",
  "properties": {
    "level": {"type": "string", "enum": ["junior", "mid", "senior", "staff", "principal"]},
    "travel_limit": {
      "type": "number",
      "minimum": 0,
      "multipleOf": 0.01,
      "description": "The travel budget per member per quarter, in USD."
    }
  },
  "required": ["level", "travel_limit"],
  "additionalProperties": false
}`
)
