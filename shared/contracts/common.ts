import { z } from 'zod';

/** The error envelope of spec section 7, used by every surface. */
export const ErrorEnvelope = z
  .object({
    error: z.object({
      code: z.string().describe('Stable error code (spec section 7).'),
      message: z.string(),
      requestId: z.string(),
    }),
  })
  .meta({ id: 'ErrorEnvelope' });

export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;
