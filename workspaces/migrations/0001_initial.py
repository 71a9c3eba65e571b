"""The agent workspace models, moved here from allocations: the tables exist already
(allocations/migrations/0003_agent_workspaces.py), so only the state is created, and their
content types follow them."""

import django.db.models.deletion
from django.db import migrations, models


def move_content_types(apps, schema_editor):
    content_type = apps.get_model("contenttypes", "ContentType")
    content_type.objects.filter(
        app_label="allocations", model__in=["agentworkspace", "workspacecontext"]
    ).update(app_label="workspaces")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('allocations', '0003_agent_workspaces'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [migrations.SeparateDatabaseAndState(state_operations=[
        migrations.CreateModel(
            name='AgentWorkspace',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('agent_type', models.CharField(max_length=54)),
                ('namespace', models.CharField(max_length=63)),
                ('storage_class', models.CharField(blank=True, max_length=253)),
                ('initial_size', models.CharField(max_length=64)),
                ('max_size', models.CharField(max_length=64)),
                ('requested_bytes', models.BigIntegerField(help_text="The PVC's current storage request.")),
                ('capacity_bytes', models.BigIntegerField(blank=True, help_text='As the PVC reports.', null=True)),
                ('usage_bytes', models.BigIntegerField(blank=True, help_text='As the agents report.', null=True)),
                ('usage_reported_at', models.DateTimeField(blank=True, null=True)),
                ('expansion_note', models.CharField(blank=True, max_length=500)),
                ('status', models.CharField(choices=[('provisioning', 'Provisioning'), ('ready', 'Ready'), ('failed', 'Failed'), ('deleting', 'Deleting'), ('deleted', 'Deleted')], default='provisioning', max_length=16)),
                ('message', models.TextField(blank=True)),
                ('adopted', models.BooleanField(default=False)),
                ('created_by', models.CharField(max_length=200)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={
                'db_table': 'allocations_agentworkspace',
                'ordering': ['namespace', 'agent_type'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('status', 'deleted'), _negated=True), fields=('namespace', 'agent_type'), name='workspace_active_agent')],
            },
        ),
        migrations.CreateModel(
            name='WorkspaceContext',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('context_id', models.CharField(max_length=253)),
                ('status', models.CharField(choices=[('active', 'Active'), ('expiring', 'Being cleaned up'), ('expired', 'Expired')], default='active', max_length=16)),
                ('created_at', models.DateTimeField()),
                ('last_accessed_at', models.DateTimeField()),
                ('ttl_seconds', models.PositiveIntegerField()),
                ('disk_usage_bytes', models.BigIntegerField(default=0)),
                ('cleanup_job', models.CharField(blank=True, max_length=63)),
                ('cleanup_result', models.TextField(blank=True)),
                ('expired_at', models.DateTimeField(blank=True, null=True)),
                ('workspace', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='contexts', to='workspaces.agentworkspace')),
            ],
            options={
                'db_table': 'allocations_workspacecontext',
                'ordering': ['-last_accessed_at'],
                'indexes': [models.Index(fields=['status', 'last_accessed_at'], name='context_expiry')],
                'constraints': [models.UniqueConstraint(fields=('workspace', 'context_id'), name='context_once_per_workspace')],
            },
        ),
    ]), migrations.RunPython(move_content_types, migrations.RunPython.noop)]
