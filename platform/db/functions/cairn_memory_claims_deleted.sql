CREATE OR REPLACE FUNCTION public.cairn_memory_claims_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  update memory_index_version v set version = v.version + 1, reset_at = v.version + 1,
         claims = v.claims - g.n, claim_length = v.claim_length - g.len
    from (select account_id, count(*) filter (where gone.state = 'current' and gone.eligibility = 'eligible') as n,
                 coalesce(sum(cairn_tsv_length(tsv)) filter (where gone.state = 'current' and gone.eligibility = 'eligible'), 0) as len
            from gone group by account_id) g
   where v.account_id = g.account_id;
  return null;
end $function$;
