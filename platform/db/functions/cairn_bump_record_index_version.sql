CREATE OR REPLACE FUNCTION public.cairn_bump_record_index_version()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  if tg_op = 'DELETE' then
    update record_index_version set version = version + 1 where account_id = old.account_id;
  else
    insert into record_index_version (account_id, version) values (new.account_id, 1)
      on conflict (account_id) do update set version = record_index_version.version + 1;
  end if;
  return null;
end $function$;
