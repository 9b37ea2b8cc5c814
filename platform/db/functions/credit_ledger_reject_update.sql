CREATE OR REPLACE FUNCTION public.credit_ledger_reject_update()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin raise exception 'credit_ledger is append-only'; end $function$;
