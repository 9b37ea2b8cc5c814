import { SelfCheckSchema } from './self-check.entity.ts';

/** Every entity the ORM knows. Explicit rather than a folder glob so bundling and type stripping stay simple. */
export const entities = [SelfCheckSchema];

export { SelfCheck } from './self-check.entity.ts';
