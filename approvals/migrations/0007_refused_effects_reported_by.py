"""The refused effects' series gained a label, who reported each (``reported_by``): the
totals retention kept for removed runs were all read from programs' output then."""

from django.db import migrations

SERIES = "contextsvc_executor_refused_effects"


def add_reported_by(apps, schema_editor):
    RetiredTally = apps.get_model("core", "RetiredTally")
    for tally in RetiredTally.objects.filter(series=SERIES):
        if len(tally.labels) == 2:
            tally.labels = [*tally.labels, "program"]
            tally.save(update_fields=["labels"])


def drop_reported_by(apps, schema_editor):
    RetiredTally = apps.get_model("core", "RetiredTally")
    merged = {}
    for tally in RetiredTally.objects.filter(series=SERIES):
        key = tuple(tally.labels[:2])
        merged[key] = merged.get(key, 0.0) + tally.value
        tally.delete()
    for labels, value in merged.items():
        RetiredTally.objects.create(series=SERIES, labels=list(labels), value=value)


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0006_grant_run_teams"),
        ("core", "0012_audit_team"),
    ]

    operations = [migrations.RunPython(add_reported_by, drop_reported_by)]
