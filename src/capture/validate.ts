/**
 * Every message from the kernel is checked here, at the session boundary,
 * against the schema the helper's own tests use (protocol.schema.json), so a
 * malformed message becomes one line in the toolbar, never a wrong figure or
 * a crash further in.
 */
import Ajv, { ValidateFunction } from 'ajv';
import { HelperMessage, MESSAGE_SCHEMA, PROTOCOL_VERSION } from './protocol';

/** A message the frontend refuses, with a one-line reason. */
export class MessageError extends Error {}

const DEFINITIONS: Record<string, string> = {
  status: 'status',
  'cell-note': 'cellNote',
  snapshot: 'snapshot',
  holders: 'holders'
};

let validators: Map<string, ValidateFunction> | null = null;

function validatorFor(type: string): ValidateFunction | undefined {
  if (!validators) {
    const ajv = new Ajv({ allErrors: false, strict: false });
    ajv.addSchema(MESSAGE_SCHEMA, 'protocol');
    validators = new Map(
      Object.entries(DEFINITIONS).map(([t, name]) => [t, ajv.compile({ $ref: `protocol#/definitions/${name}` })])
    );
  }
  return validators.get(type);
}

/** The message, typed, or a MessageError that says what is wrong with it. */
export function validateMessage(data: unknown): HelperMessage {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new MessageError('a kernel message that is not an object');
  }
  const { v, type } = data as { v?: unknown; type?: unknown };
  if (v !== PROTOCOL_VERSION) {
    throw new MessageError(`the kernel helper speaks protocol ${String(v)}, this extension ${PROTOCOL_VERSION}`);
  }
  const validate = typeof type === 'string' ? validatorFor(type) : undefined;
  if (!validate) {
    throw new MessageError(`an unknown kernel message type ${JSON.stringify(type)?.slice(0, 40)}`);
  }
  if (!validate(data)) {
    const e = validate.errors?.[0];
    const what = `a malformed ${type} message: ${e?.instancePath || '/'} ${e?.message ?? ''}`.trim();
    // A replayed cell's values are the recording's, passed on as they were: the line names the recording.
    const { replay } = data as { replay?: unknown };
    throw new MessageError(typeof replay === 'string' ? `the replayed recording ${replay}: ${what}` : what);
  }
  return data as HelperMessage;
}
