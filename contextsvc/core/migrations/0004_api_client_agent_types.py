"""Agent clients name the agent types they may act for. Clients that already hold the
agent scope keep acting for any type ("*"), as they did; narrow them afterwards."""

from django.db import migrations, models


def existing_agents_keep_any_type(apps, schema_editor):  # type: ignore[no-untyped-def]
    ApiClient = apps.get_model("core", "ApiClient")
    for client in ApiClient.objects.all():
        if "agent" in client.scopes:
            client.agent_types = ["*"]
            client.save(update_fields=["agent_types"])


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0003_capabilities"),
    ]

    operations = [
        migrations.AddField(
            model_name="apiclient",
            name="agent_types",
            field=models.JSONField(blank=True, default=list),
        ),
        migrations.RunPython(existing_agents_keep_any_type, migrations.RunPython.noop),
    ]
